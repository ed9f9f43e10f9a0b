# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln-variant-provider`: print this machine's variant properties, one a line
(`amd :: gfx_arch :: gfx942`); exit 1, printing nothing, when no GPU is found."""

from __future__ import annotations

import sys

from .plugin import PLUGINS


def supported_properties() -> list[str]:
    return [
        f"{plugin.namespace} :: {config.name} :: {value}"
        for plugin in PLUGINS
        for config in plugin.get_supported_configs()
        for value in config.values
    ]


def main(argv: list[str] | None = None) -> int:
    found = supported_properties()
    for line in found:
        print(line)
    if not found:
        print(
            "no GPU found (tried hip-python, rocminfo, offload-arch, nvidia-smi)", file=sys.stderr
        )
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
