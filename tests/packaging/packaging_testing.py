# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Helpers of the packaging tests: tools/ put on sys.path (import this module first), and
tiny fake wheels whose ELF files carry GPU code sections laid out like the real ones
(clang offload bundles, NVIDIA fatbins)."""

import struct
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(ROOT / "tools"))


def make_elf(sections: dict[str, bytes]) -> bytes:
    """A minimal 64-bit little-endian ELF shared object holding `sections` (PROGBITS)."""
    names = [".shstrtab", *sections]
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    body, placed = bytearray(64), []
    for data in [strtab, *sections.values()]:
        placed.append((len(body), len(data)))
        body += data + b"\0" * (-len(data) % 8)
    shoff = len(body)
    body += bytes(64)  # the null section header
    name_offset = 1
    for i, (name, (offset, size)) in enumerate(zip(names, placed)):
        kind = 3 if i == 0 else 1  # STRTAB, PROGBITS
        body += struct.pack("<IIQQQQIIQQ", name_offset, kind, 0, 0, offset, size, 0, 0, 1, 0)
        name_offset += len(name) + 1
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(names) + 1, 1
    )
    body[:64] = header
    return bytes(body)


def clang_bundle(isas: list[str]) -> bytes:
    """A clang offload bundle: a host entry and one code object per ISA."""
    ids = ["host-x86_64-unknown-linux-gnu-"] + [f"hipv4-amdgcn-amd-amdhsa--{a}" for a in isas]
    header = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(ids))
    for bundle_id in ids:
        header += struct.pack("<QQQ", 0, 0, len(bundle_id)) + bundle_id.encode()
    return header + b"\0" * (-len(header) % 4096)


def nv_fatbin(sms: list[int], ptx: list[int] = ()) -> bytes:
    """An NVIDIA fatbin: a SASS entry (kind 2) per sm, a PTX entry (kind 1) per `ptx`."""
    entries = b""
    for kind, sm in [(2, s) for s in sms] + [(1, p) for p in ptx]:
        payload = b"\x7fELF-fake-cubin" if kind == 2 else b".version 9.0"
        payload += b"\0" * (-len(payload) % 8)
        head = struct.pack("<HHIQ", kind, 0x101, 64, len(payload)) + bytes(12)
        head += struct.pack("<I", sm) + bytes(64 - 32)
        entries += head + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entries)) + entries


# The METADATA fields of a real wheel that tools/check_wheel.py requires (and a few others).
METADATA_FIELDS = [
    ("Metadata-Version", "2.4"),
    ("Name", "graphkiln"),
    ("Version", "{version}"),
    ("Author", "graphkiln authors"),
    ("License-Expression", "Apache-2.0"),
    ("License-File", "LICENSE"),
    ("Project-URL", "Homepage, https://github.com/graphkiln/graphkiln"),
    ("Project-URL", "Source, https://github.com/graphkiln/graphkiln"),
    ("Project-URL", "Issues, https://github.com/graphkiln/graphkiln/issues"),
    ("Project-URL", "Documentation, https://github.com/graphkiln/graphkiln#readme"),
]


def make_wheel(
    folder: Path,
    version: str,
    sections: dict[str, bytes] | None = None,
    padding: int = 0,
    leave_out: tuple[str, ...] = (),
    license_text: bytes | None = None,
) -> Path:
    """graphkiln-<version>-cp311-cp311-manylinux_2_28_x86_64.whl with an _core ELF, METADATA
    (METADATA_FIELDS but those named in `leave_out`, e.g. "Author" or "Project-URL: Issues")
    and dist-info/licenses/LICENSE (the repository's, or `license_text`; not there when
    `leave_out` names "licenses/LICENSE"); a ROCm version also gets the CPU-only module
    graphkiln/_cpu_only/_core (not when `leave_out` names "_cpu_only")."""
    path = folder / f"graphkiln-{version}-cp311-cp311-manylinux_2_28_x86_64.whl"
    info = f"graphkiln-{version}.dist-info"
    fields = [
        (k, v.format(version=version))
        for k, v in METADATA_FIELDS
        if k not in leave_out and f"{k}: {v.partition(',')[0]}" not in leave_out
    ]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as wheel:
        wheel.writestr("graphkiln/_core.cpython-311-x86_64-linux-gnu.so", make_elf(sections or {}))
        wheel.writestr("graphkiln/__init__.py", "")
        if "+rocm" in version and "_cpu_only" not in leave_out:  # a ROCm build's 2nd module
            wheel.writestr(
                "graphkiln/_cpu_only/_core.cpython-311-x86_64-linux-gnu.so", make_elf({})
            )
        if padding:
            wheel.writestr("graphkiln/models/blob.bin", bytes(padding))
        wheel.writestr(
            f"{info}/METADATA", "".join(f"{k}: {v}\n" for k, v in fields) + "\nThe README.\n"
        )
        if "licenses/LICENSE" not in leave_out:
            text = (ROOT / "LICENSE").read_bytes() if license_text is None else license_text
            wheel.writestr(f"{info}/licenses/LICENSE", text)
    return path


def amd_sections(isas: list[str]) -> dict[str, bytes]:
    return {".hip_fatbin": clang_bundle(isas)}


def nvidia_sections(sms: list[int], ptx: list[int] = ()) -> dict[str, bytes]:
    return {".nv_fatbin": nv_fatbin(sms, ptx)}
