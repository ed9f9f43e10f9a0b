# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The JSON container: one readable object,

    {"magic": "graphkiln", "format_version": 1, "producer": ..., "tensors": [...],
     "graph": ..., "compiled": ...}

Tensor records hold base64 of the raw bytes with dtype and shape, small exact tensors a
plain "values" list, string tensors a "strings" list. Non-finite floats are the strings
"nan", "inf", "-inf", so the text is standard JSON."""

from __future__ import annotations

import json

from ..errors import FormatError
from .checks import damaged, need_int, need_list
from .limits import FORMAT_VERSION, JSON_MAGIC, Limits, check_version, version_of
from .tensors import Budget, decode_record, json_record

ELIDE_ABOVE = 96  # base64 characters kept by `elide=True` (for printing)


def dumps(doc: dict, arrays: list, elide: bool = False) -> str:
    records = [json_record(a) for a in arrays]
    if elide:
        for record in records:
            text = record.get("base64")
            if text is not None and len(text) > ELIDE_ABOVE:
                record["base64"] = f"{text[:48]}... ({len(text)} characters elided)"
    full = {"magic": JSON_MAGIC, "format_version": version_of(doc), **doc, "tensors": records}
    return "\n".join(_pretty(full, "")) + "\n"


def _pretty(obj, indent: str, width: int = 100) -> list[str]:
    """JSON lines: a value that fits in `width` on one line, else one line per item."""
    flat = json.dumps(obj, allow_nan=False)
    if len(flat) + len(indent) <= width or not isinstance(obj, (dict, list)) or not obj:
        return [flat]
    inner = indent + " "
    if isinstance(obj, dict):
        items = [(json.dumps(k) + ": ", v) for k, v in obj.items()]
        opening, closing = "{", "}"
    else:
        items = [("", v) for v in obj]
        opening, closing = "[", "]"
    lines = [opening]
    for i, (label, value) in enumerate(items):
        body = _pretty(value, inner, width)
        body[0] = inner + label + body[0]
        if i < len(items) - 1:
            body[-1] += ","
        lines.extend(body)
    lines.append(indent + closing)
    return lines


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON (non-finite floats are written as strings)")


def parse(data, limits: Limits) -> dict:
    if len(data) > limits.max_document_bytes:
        raise FormatError(f"damaged file: {len(data)} bytes of JSON is over the limit")
    try:
        text = bytes(data).decode("utf-8")
        doc = json.loads(text, parse_constant=_no_constants)
    except (RecursionError, ValueError, UnicodeDecodeError) as exc:
        raise FormatError(
            f"damaged file: the JSON does not parse: {type(exc).__name__}: {str(exc)[:200]}"
        ) from None
    if not isinstance(doc, dict) or doc.get("magic") != JSON_MAGIC:
        raise FormatError('not a graphkiln saved program: no top-level "magic": "graphkiln"')
    version = need_int(doc.get("format_version"), "format_version")
    if version > FORMAT_VERSION:
        raise FormatError(
            f"format version {version} is newer than this build of graphkiln reads "
            f"(up to {FORMAT_VERSION}): upgrade graphkiln to load it"
        )
    if version < 1:
        raise damaged("format_version", f"version {version} does not exist")
    return doc


def read(data, limits: Limits) -> tuple[dict, list]:
    doc = parse(data, limits)
    if "tensors" not in doc:
        raise damaged("document", "missing field 'tensors'")
    check_version(doc, doc["format_version"])
    budget = Budget(limits)
    tensors = [
        decode_record(record, f"tensors[{i}]", limits, budget)
        for i, record in enumerate(need_list(doc["tensors"], "tensors", limits))
    ]
    return doc, tensors
