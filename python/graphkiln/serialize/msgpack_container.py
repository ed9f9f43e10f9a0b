# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The MessagePack container: a fixed header, the msgpack document, then the data section.

    offset 0   b"GKILN" b"M"       magic and format byte
           6   u32 version           (every integer little-endian)
          10   u64 document length   u32 document CRC-32
          22   u64 data offset       (a multiple of 64) u64 data length   u32 data CRC-32
          42   document              (msgpack; tensor records name offset and nbytes)
    data offset  data section        (each tensor's raw bytes at a multiple of 64, zero padded)

The document's CRC is always checked; the data's only with verify_data=True (reading every
byte of a large model costs more than loading it). Arrays are views of the buffer (no copy)."""

from __future__ import annotations

import struct
import zlib

import msgpack
import numpy as np

from ..errors import FormatError
from .checks import need_dict, need_list
from .limits import DATA_ALIGNMENT, FORMAT_VERSION, MSGPACK_MAGIC, Limits, check_version, version_of
from .tensors import Budget, decode_record, normalized, string_elements

PREFIX = struct.Struct("<6sI")
LAYOUT = struct.Struct("<QIQQI")
HEADER_SIZE = PREFIX.size + LAYOUT.size


def _align(n: int) -> int:
    return -(-n // DATA_ALIGNMENT) * DATA_ALIGNMENT


def _byte_view(array: np.ndarray) -> memoryview:
    return memoryview(array.reshape(-1).view(np.uint8))


def pack(doc: dict, arrays: list) -> list:
    """The file as a list of chunks (bytes or memoryviews of the arrays: nothing copied)."""
    records, data_chunks, size = [], [], 0
    for array in arrays:
        dtype, array = normalized(array)
        if dtype.value == "str":
            records.append(
                {
                    "dtype": "str",
                    "shape": list(array.shape),
                    "strings": string_elements(array, for_json=False),
                }
            )
            continue
        padding = _align(size) - size
        if padding:
            data_chunks.append(bytes(padding))
            size += padding
        records.append(
            {
                "dtype": dtype.value,
                "shape": list(array.shape),
                "offset": size,
                "nbytes": array.nbytes,
            }
        )
        if array.nbytes:
            data_chunks.append(_byte_view(array))
            size += array.nbytes
    document = msgpack.packb(
        {**doc, "tensors": records}, use_bin_type=True, unicode_errors="surrogatepass"
    )
    return seal(document, data_chunks, version_of(doc))


def seal(document: bytes, data_chunks: list, version: int = FORMAT_VERSION) -> list:
    """Header + document + padding + data, with lengths and CRCs filled in."""
    data_crc, data_length = 0, 0
    for chunk in data_chunks:
        data_crc = zlib.crc32(chunk, data_crc)
        data_length += len(chunk)
    data_offset = _align(HEADER_SIZE + len(document))
    header = PREFIX.pack(MSGPACK_MAGIC, version) + LAYOUT.pack(
        len(document), zlib.crc32(document), data_offset, data_length, data_crc
    )
    gap = bytes(data_offset - HEADER_SIZE - len(document))
    return [header, document, gap, *data_chunks]


def split(buffer) -> tuple[memoryview, memoryview]:
    """Check the header; return the document bytes and the data section (views)."""
    view = memoryview(buffer)
    if len(view) < PREFIX.size:
        raise FormatError(f"damaged file: truncated: {len(view)} bytes, shorter than the header")
    magic, version = PREFIX.unpack_from(view)
    if magic != MSGPACK_MAGIC:
        raise FormatError(
            f"not a graphkiln saved program: magic {bytes(magic)!r}, expected {MSGPACK_MAGIC!r}"
        )
    if version > FORMAT_VERSION:
        raise FormatError(
            f"format version {version} is newer than this build of graphkiln reads "
            f"(up to {FORMAT_VERSION}): upgrade graphkiln to load it"
        )
    if version < 1:
        raise FormatError(f"damaged file: format version {version} does not exist")
    if len(view) < HEADER_SIZE:
        raise FormatError(f"damaged file: truncated: {len(view)} bytes, shorter than the header")
    doc_length, doc_crc, data_offset, data_length, data_crc = LAYOUT.unpack_from(view, PREFIX.size)
    doc_end = HEADER_SIZE + doc_length
    if doc_end > len(view) or data_offset < doc_end or data_offset % DATA_ALIGNMENT:
        raise FormatError(
            f"damaged file: header declares a {doc_length}-byte document and data at "
            f"{data_offset}, the file has {len(view)} bytes (truncated?)"
        )
    if data_offset + data_length != len(view):
        raise FormatError(
            f"damaged file: header declares {data_offset + data_length} bytes, the "
            f"file has {len(view)} (truncated or extended)"
        )
    if any(view[doc_end:data_offset]):
        raise FormatError("damaged file: the padding after the document is not zero")
    document = view[HEADER_SIZE:doc_end]
    if zlib.crc32(document) != doc_crc:
        raise FormatError("damaged file: the document's CRC-32 does not match")
    return document, view[data_offset:], data_crc


def unpack_document(document, limits: Limits):
    if len(document) > limits.max_document_bytes:
        raise FormatError(f"damaged file: document of {len(document)} bytes is over the limit")
    try:
        return msgpack.unpackb(
            document,
            raw=False,
            strict_map_key=True,
            use_list=True,
            unicode_errors="surrogatepass",
            max_str_len=limits.max_string_bytes,
            max_bin_len=limits.max_string_bytes,
            max_array_len=limits.max_list_length,
            max_map_len=limits.max_list_length,
            max_ext_len=0,
        )
    except Exception as exc:  # noqa: BLE001 - msgpack raises many kinds, all meaning damage
        raise FormatError(
            f"damaged file: the msgpack document does not decode: {type(exc).__name__}: {exc}"
        ) from None


def read(buffer, limits: Limits, verify_data: bool) -> tuple[dict, list]:
    """The document and its tensors (views of `buffer`)."""
    document, data, data_crc = split(buffer)
    if verify_data and zlib.crc32(data) != data_crc:
        raise FormatError("damaged file: the tensor data's CRC-32 does not match")
    doc = unpack_document(document, limits)
    need_dict(doc, "document", ("graph", "compiled", "tensors"), ("producer",))
    check_version(doc, PREFIX.unpack_from(memoryview(buffer))[1])
    budget = Budget(limits)
    tensors = [
        decode_record(record, f"tensors[{i}]", limits, budget, data, len(data))
        for i, record in enumerate(need_list(doc["tensors"], "tensors", limits))
    ]
    return doc, tensors
