# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Save and load programs (imported, or compiled with their compiled graph, target, options
and pass records) as MessagePack or JSON. See README.md for the format."""

from __future__ import annotations

import gc
import mmap
import os

from ..errors import FormatError, GraphkilnError
from ..program import Program
from . import json_container, msgpack_container
from .encode import program_document
from .limits import DEFAULT_LIMITS, FORMAT_VERSION, MSGPACK_MAGIC, Limits
from .decode import program_from_document
from .tensors import TensorTable

FORMATS = ("msgpack", "json")
# File name extensions that say which format a file holds. Any other name (`.gkp`, the
# CLI's) may hold either: `save` writes msgpack there unless asked for json.
EXTENSION_FORMATS = {".json": "json", ".msgpack": "msgpack"}


def format_for_path(path, format: str | None = None) -> str:
    """The format `save` writes to `path`: `format` when given, else the one the name's
    extension says (.json: "json", .msgpack: "msgpack"), else "msgpack". A format that
    contradicts the extension is a ValueError (a .json file that is not JSON breaks every
    tool that opens it). The CLI's `compile -o FILE [--format F]` follows the same rule."""
    if format is not None and format not in FORMATS:
        raise ValueError(
            f"unknown format {format!r}; use one of {', '.join(FORMATS)} "
            "(or None: from the file name)"
        )
    extension = os.path.splitext(os.fspath(path))[1].lower()
    named = EXTENSION_FORMATS.get(extension)
    if format is None:
        return named or "msgpack"
    if named is not None and named != format:
        raise ValueError(
            f"{os.fspath(path)!r} is named as a {named} file ({extension}) but the "
            f"format asked for is {format!r}: ask for {named!r}, or name the file "
            f"otherwise (e.g. .gkp, which holds either)"
        )
    return format


def _chunks(program: Program, format: str) -> list:
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    table = TensorTable()
    doc = program_document(program, table)
    if format == "json":
        return [json_container.dumps(doc, table.arrays).encode("ascii")]
    return msgpack_container.pack(doc, table.arrays)


def save_buffer(program: Program, format: str = "msgpack") -> bytes:
    """The saved program as bytes."""
    return b"".join(_chunks(program, format))


def save(program: Program, path, format: str | None = None) -> None:
    """Write the program to `path` as `format` (default: from the name, see format_for_path)
    through a temporary file and a rename, so a reader that has the old file mapped never
    sees it change under it. `load` tells the format from the content, whatever the name."""
    chunks = _chunks(program, format_for_path(path, format))
    path = os.fspath(path)
    temporary = f"{path}.tmp{os.getpid()}"
    try:
        with open(temporary, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def format_of(head: bytes) -> str | None:
    """ "msgpack" or "json" from a file's first bytes, None when it is neither."""
    if head.startswith(MSGPACK_MAGIC):
        return "msgpack"
    if head.lstrip(b" \t\r\n").startswith(b"{"):
        return "json"
    return None


def is_saved_program(path) -> bool:
    """Whether the file starts like a saved program (an ONNX model never does)."""
    try:
        with open(path, "rb") as f:
            return format_of(f.read(64)) is not None
    except OSError:
        return False


def load_buffer(data, *, limits: Limits = DEFAULT_LIMITS, verify_data: bool = False) -> Program:
    """A program from bytes written by save_buffer; raises FormatError for anything else.
    Arrays of a bytes object are read-only views of it; other buffers are copied first."""
    if not isinstance(data, bytes):
        try:
            data = memoryview(data).tobytes()
        except TypeError:
            raise TypeError(f"load_buffer needs bytes, got {type(data).__name__}") from None
    return _decode(data, limits, verify_data)


def load(
    path, *, limits: Limits = DEFAULT_LIMITS, verify_data: bool = False, map_file: bool = True
) -> Program:
    """A program from a file written by save. A msgpack file is memory-mapped read-only and
    its arrays are views of the mapping (pages are read as the program touches them): do not
    rewrite the file in place while the program is in use (save() replaces it by a rename,
    which is safe). `map_file=False` reads the whole file into memory instead."""
    with open(path, "rb") as f:
        head = f.read(len(MSGPACK_MAGIC))
        size = os.fstat(f.fileno()).st_size
        if format_of(head) == "msgpack" and size > len(head) and map_file:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        elif size > limits.max_document_bytes and format_of(head) != "msgpack":
            raise FormatError(
                f"{os.fspath(path)}: {size} bytes is over Limits.max_document_bytes "
                "for a file that is not a msgpack saved program"
            )
        else:
            f.seek(0)
            data = f.read()
    return _decode(data, limits, verify_data)


def _decode(data, limits: Limits, verify_data: bool) -> Program:
    kind = format_of(bytes(data[:64]))
    if kind is None:
        raise FormatError(
            f"not a graphkiln saved program: it starts with {bytes(data[:8])!r}, "
            f"neither {MSGPACK_MAGIC!r} nor a JSON object"
        )
    # Loading makes many objects and frees none: the cycle collector would only rescan them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if kind == "msgpack":
            doc, tensors = msgpack_container.read(data, limits, verify_data)
        else:
            doc, tensors = json_container.read(data, limits)
        return program_from_document(doc, tensors, limits)
    except FormatError:
        raise
    except (GraphkilnError, Exception) as exc:  # noqa: BLE001  any other failure is damage too
        raise FormatError(f"damaged file: {type(exc).__name__}: {str(exc)[:300]}") from exc
    finally:
        if collecting:
            gc.enable()


def to_json_text(program: Program, elide: bool = True) -> str:
    """The readable JSON form (large tensors' base64 shortened unless elide=False)."""
    table = TensorTable()
    doc = program_document(program, table)
    return json_container.dumps(doc, table.arrays, elide=elide)


__all__ = [
    "EXTENSION_FORMATS",
    "FORMATS",
    "FORMAT_VERSION",
    "Limits",
    "format_for_path",
    "format_of",
    "is_saved_program",
    "load",
    "load_buffer",
    "save",
    "save_buffer",
    "to_json_text",
]
