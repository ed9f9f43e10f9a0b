#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Check that each wheel carries exactly the GPU ISAs it was asked for, within a size budget,
with the distribution's license and metadata.

    python tools/check_wheel.py dist/*.whl [--expect gfx908,gfx90a] [--max-mb 80]

What was asked comes from the version label (tools/build_wheels.py: none = CPU, rocm6 = fat,
rocm6.gfx90a, cu13.sm90) unless --expect names the ISAs. What is carried is read from the
binaries: the `.hip_fatbin` section's clang offload bundle ids
(`hipv4-amdgcn-amd-amdhsa--gfx90a`) and the `.nv_fatbin` section's SASS entries (sm_90).
The .dist-info must hold the LICENSE file (PEP 639: `licenses/LICENSE`, named by a
License-File field) and METADATA a License-Expression, an author and the project URLs.
"""

from __future__ import annotations

import argparse
import email.parser
import re
import struct
import sys
import zipfile
from pathlib import Path

from build_wheels import parse_label, wheel_version

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_BUNDLE_MAGIC = b"CCOB"
NV_FATBIN_MAGIC = 0xBA55ED50
NV_KIND_SASS = 2
BUDGET_MB = {"cpu": 20.0, "arch": 60.0, "fat": 100.0}  # 100 MB: PyPI's default file limit
LICENSE_EXPRESSION = "Apache-2.0"
LICENSE_FILE = "LICENSE"
PROJECT_URLS = ("Homepage", "Source", "Issues", "Documentation")


def elf_sections(data: bytes) -> dict[str, bytes]:
    """The named sections of a 64-bit little-endian ELF file ({} for anything else)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return {}
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]

    def name(offset: int) -> str:
        start = names_offset + offset
        return data[start : data.index(b"\0", start)].decode()

    return {name(h[0]): data[h[4] : h[4] + h[5]] for h in headers if h[1] != 8}  # 8: NOBITS


def amd_isas(section: bytes) -> set[str]:
    """ISAs of every clang offload bundle in a .hip_fatbin section."""
    if COMPRESSED_BUNDLE_MAGIC in section and BUNDLE_MAGIC not in section:
        raise ValueError(
            "compressed code objects (--offload-compress): list them with "
            "clang-offload-bundler --list"
        )
    isas = set()
    start = section.find(BUNDLE_MAGIC)
    while start >= 0:
        (count,) = struct.unpack_from("<Q", section, start + len(BUNDLE_MAGIC))
        entry = start + len(BUNDLE_MAGIC) + 8
        for _ in range(count):
            _offset, _size, id_size = struct.unpack_from("<QQQ", section, entry)
            bundle_id = section[entry + 24 : entry + 24 + id_size].decode()
            entry += 24 + id_size
            found = re.fullmatch(r"hipv4-amdgcn-amd-amdhsa-[^-]*-(gfx[0-9a-f]+)(:.*)?", bundle_id)
            if found:
                isas.add(found.group(1))
        start = section.find(BUNDLE_MAGIC, entry)
    return isas


def nvidia_isas(section: bytes) -> set[str]:
    """SASS ISAs of every fatbin in a .nv_fatbin section (the same as cuobjdump --list-elf)."""
    isas, start = set(), 0
    while start + 16 <= len(section):
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", section, start)
        if magic != NV_FATBIN_MAGIC:
            start += 8  # fatbins are 8-byte aligned in the section
            continue
        entry, end = start + header_size, start + header_size + fat_size
        while entry < end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", section, entry)
            (sm,) = struct.unpack_from("<I", section, entry + 28)
            if kind == NV_KIND_SASS:
                isas.add(f"sm_{sm}")
            entry += entry_header + payload
        start = end
    return isas


def wheel_isas(path: Path) -> dict[str, set[str]]:
    """{binary in the wheel: ISAs it carries} for every ELF file that carries GPU code."""
    found = {}
    with zipfile.ZipFile(path) as wheel:
        for name in wheel.namelist():
            if not re.search(r"\.so(\.\d+)*$", name):
                continue
            sections = elf_sections(wheel.read(name))
            isas = set()
            if ".hip_fatbin" in sections:
                isas |= amd_isas(sections[".hip_fatbin"])
            if ".nv_fatbin" in sections:
                isas |= nvidia_isas(sections[".nv_fatbin"])
            if isas:
                found[name] = isas
    return found


def rocm_layout_problems(path: Path) -> list[str]:
    """A ROCm wheel must load without the HIP runtime and with either ROCm's: its GPU module
    names no libamdhip64 (no DT_NEEDED, no symbol version of one: graphkiln/_native.py loads
    the runtime at run time), and it carries the CPU-only module that serves without one."""
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        problems = []
        if not any(re.fullmatch(r"graphkiln/_cpu_only/_core[^/]*\.so", n) for n in names):
            problems.append("no graphkiln/_cpu_only/_core*.so (the module without GPU code)")
        for name in names:
            if re.fullmatch(r"graphkiln/_core[^/]*\.so", name):
                dynstr = elf_sections(wheel.read(name)).get(".dynstr", b"")
                if b"libamdhip64" in dynstr:
                    problems.append(f"{name} links libamdhip64 (it must be loaded at run time)")
    return problems


def metadata_problems(path: Path) -> list[str]:
    """What the wheel's .dist-info lacks of the license and metadata ([] when nothing)."""
    with zipfile.ZipFile(path) as wheel:
        names = set(wheel.namelist())
        infos = sorted({n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")})
        if len(infos) != 1:
            return [f"expected one .dist-info folder, found {len(infos)}"]
        info = infos[0]
        if f"{info}/METADATA" not in names:
            return [f"{info}/METADATA is missing"]
        message = email.parser.HeaderParser().parsestr(
            wheel.read(f"{info}/METADATA").decode("utf-8", "replace")
        )
        license_path = f"{info}/licenses/{LICENSE_FILE}"
        license_text = wheel.read(license_path) if license_path in names else None
    problems = []
    if message.get("License-Expression") != LICENSE_EXPRESSION:
        problems.append(
            f"License-Expression is {message.get('License-Expression')!r}, "
            f"not {LICENSE_EXPRESSION!r}"
        )
    if LICENSE_FILE not in (message.get_all("License-File") or []):
        problems.append(f"no License-File: {LICENSE_FILE} in METADATA")
    if license_text is None:
        problems.append(f"{license_path} is missing")
    elif b"Apache License" not in license_text or b"Version 2.0" not in license_text:
        problems.append(f"{license_path} is not the Apache License 2.0 text")
    if not (message.get("Author") or message.get("Author-email")):
        problems.append("no Author in METADATA")
    urls = {u.partition(",")[0].strip() for u in message.get_all("Project-URL") or []}
    missing = [label for label in PROJECT_URLS if label not in urls]
    if missing:
        problems.append(f"no Project-URL for {', '.join(missing)}")
    return problems


def isa_order(isa: str) -> tuple:
    """gfx908 < gfx90a < gfx1030; sm_90 < sm_100."""
    prefix, number = re.match(r"(\D+)(\w*)", isa).groups()
    return prefix, len(number), number


def _join(isas) -> str:
    return ",".join(sorted(isas, key=isa_order))


def check(path: Path, expect: list[str] | None, max_mb: float | None) -> tuple[bool, str]:
    flavor = parse_label(wheel_version(path.name))
    asked = set(expect if expect is not None else flavor.expected_isas)
    carried = wheel_isas(path)
    isas = set().union(*carried.values()) if carried else set()
    size_mb = path.stat().st_size / 1e6
    budget = (
        max_mb or BUDGET_MB["cpu" if flavor.backend == "cpu" else "fat" if flavor.fat else "arch"]
    )
    problems = []
    if isas != asked:
        problems.append(
            f"ISAs differ: missing {_join(asked - isas) or 'none'}, "
            f"unexpected {_join(isas - asked) or 'none'}"
        )
    if size_mb > budget:
        problems.append(f"{size_mb:.2f} MB is over the {budget:g} MB budget")
    problems += metadata_problems(path)
    if flavor.platform == "amd":
        problems += rocm_layout_problems(path)
    where = "; ".join(f"{name}: {_join(v)}" for name, v in sorted(carried.items()))
    lines = [
        f"{path.name}: {size_mb:.2f} MB (budget {budget:g} MB)",
        f"  asked:   {_join(asked) or 'no GPU code (CPU wheel)'}",
        f"  carries: {_join(isas) or 'no GPU code'}" + (f" [{where}]" if where else ""),
        "  " + ("OK" if not problems else "FAIL: " + "; ".join(problems)),
    ]
    return not problems, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument(
        "--expect", help="comma-separated ISAs to expect instead of the label's ('' for none)"
    )
    parser.add_argument(
        "--max-mb",
        type=float,
        help="size budget per wheel in MB (default: "
        + ", ".join(f"{k} {v:g}" for k, v in BUDGET_MB.items())
        + ")",
    )
    args = parser.parse_args(argv)
    expect = None if args.expect is None else [a for a in args.expect.split(",") if a]
    ok = True
    for path in args.wheels:
        try:
            passed, report = check(path, expect, args.max_mb)
        except (ValueError, zipfile.BadZipFile, struct.error) as exc:
            passed, report = False, f"{path.name}: FAIL: {exc}"
        ok &= passed
        print(report)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
