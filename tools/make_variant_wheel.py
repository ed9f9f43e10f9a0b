#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Make the variant wheel (PEP 825 draft) of a GPU wheel from tools/build_wheels.py:

    graphkiln-0.1.0+rocm6.gfx942-cp311-cp311-manylinux_2_28_x86_64.whl
 -> graphkiln-0.1.0-cp311-cp311-manylinux_2_28_x86_64-rocm6_gfx942.whl

Same files; the version loses its local label (the variant properties say what it said);
`graphkiln-0.1.0.dist-info/variant.json` is added and RECORD rewritten with new hashes.
Fat wheels (+rocm6, +cu13) get the label rocm6 / cu13. The CPU wheel stays a plain wheel.

    python tools/make_variant_wheel.py dist/graphkiln-0.1.0+rocm6.gfx942-...whl --out dist/variants
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import sys
import zipfile
from pathlib import Path

from build_wheels import parse_label, wheel_version
from wheel_variants import DIST_INFO_FILENAME, dist_info_json, validate_dist_info


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def variant_wheel_name(wheel_name: str, label: str) -> str:
    """name-ver+local-py-abi-plat.whl -> name-ver-py-abi-plat-label.whl"""
    name, version, *tags = wheel_name.removesuffix(".whl").split("-")
    return "-".join([name, version.split("+")[0], *tags, label]) + ".whl"


def make_variant_wheel(wheel: Path, out: Path) -> Path:
    """Write the variant wheel of `wheel` into `out`; return its path."""
    version = wheel_version(wheel.name)
    flavor = parse_label(version)
    if flavor.backend == "cpu":
        raise ValueError(f"{wheel.name}: a CPU wheel has no variant (publish it as it is)")
    label, variant_json = dist_info_json(flavor)
    validate_dist_info(variant_json, label)
    name = wheel.name.split("-")[0]
    base = version.split("+")[0]
    old_info, new_info = f"{name}-{version}.dist-info/", f"{name}-{base}.dist-info/"
    out.mkdir(parents=True, exist_ok=True)
    target = out / variant_wheel_name(wheel.name, label)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        if new_info + DIST_INFO_FILENAME in {
            i.filename.replace(old_info, new_info, 1) for i in src.infolist()
        }:
            raise ValueError(f"{wheel.name} already is a variant wheel")
        record = []
        for item in src.infolist():
            arcname = item.filename.replace(old_info, new_info, 1)
            if arcname == new_info + "RECORD":
                continue
            data = src.read(item)
            if arcname == new_info + "METADATA":
                data = re.sub(
                    rb"^Version: .*$",
                    f"Version: {base}".encode(),
                    data,
                    count=1,
                    flags=re.MULTILINE,
                )
            info = zipfile.ZipInfo(arcname, item.date_time)
            info.external_attr, info.compress_type = item.external_attr, zipfile.ZIP_DEFLATED
            dst.writestr(info, data)
            record.append(_record_line(arcname, data))
        dst.writestr(new_info + DIST_INFO_FILENAME, variant_json)
        record.append(_record_line(new_info + DIST_INFO_FILENAME, variant_json.encode()))
        record.append(f"{new_info}RECORD,,")
        dst.writestr(new_info + "RECORD", "\n".join(record) + "\n")
    return target


def read_variant_json(wheel: Path) -> str:
    """The `*.dist-info/variant.json` text of a variant wheel."""
    with zipfile.ZipFile(wheel) as zf:
        names = [
            n for n in zf.namelist() if re.fullmatch(rf"[^/]+\.dist-info/{DIST_INFO_FILENAME}", n)
        ]
        if len(names) != 1:
            raise ValueError(f"{wheel.name}: {len(names)} dist-info/{DIST_INFO_FILENAME} files")
        return zf.read(names[0]).decode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+", type=Path, help="GPU wheels from build_wheels.py")
    parser.add_argument("--out", type=Path, default=None, help="folder (default: the wheel's)")
    args = parser.parse_args(argv)
    for wheel in args.wheels:
        try:
            print(make_variant_wheel(wheel, args.out or wheel.parent))
        except ValueError as exc:
            print(f"make_variant_wheel: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
