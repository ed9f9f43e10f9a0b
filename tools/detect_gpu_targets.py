#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Print the ISAs of this machine's GPUs, `;`-joined (gfx90a;gfx1100 or sm_90), for
GPU_TARGETS=native. Exit 1, printing nothing, when no GPU is found.

The probes (hip-python, else offload-arch / rocminfo, else nvidia-smi) and their parsers
live in python/graphkiln/device.py, loaded here by path: CMake runs this script before
graphkiln or its dependencies are installed.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import sys
from pathlib import Path

DEVICE_PY = Path(__file__).resolve().parent.parent / "python" / "graphkiln" / "device.py"


@functools.cache
def load_device_module():
    spec = importlib.util.spec_from_file_location("graphkiln_device", DEVICE_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print each device and the probe that found it (on stderr)",
    )
    args = parser.parse_args(argv)
    devices = load_device_module().detect_devices()
    if args.verbose:
        for d in devices:
            print(f"{d.arch}\t{d.name}\t({d.source})", file=sys.stderr)
    archs = list(dict.fromkeys(d.arch for d in devices))
    if not archs:
        print(
            "no GPU found (tried hip-python, offload-arch, rocminfo, nvidia-smi)", file=sys.stderr
        )
        return 1
    print(";".join(archs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
