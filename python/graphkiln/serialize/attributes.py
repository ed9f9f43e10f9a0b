# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Attribute values of a document as IR values, for every kind but graph (decode.py reads
those). `quick_value` accepts only the exact form the writer produces and answers NOT_QUICK
for anything else; `checked_value` then accepts what is valid and raises FormatError,
with the location, for the rest."""

from __future__ import annotations

from ..ir import DType
from .checks import damaged, need_float, need_int, need_list, need_str
from .limits import Limits

NOT_QUICK = object()
DTYPES_BY_NAME = {d.value: d for d in DType}


def quick_value(kind: str, raw, tensors: list, limits: Limits):
    kind_of = type(raw)
    if kind == "int":
        return raw if kind_of is int else NOT_QUICK
    if kind == "tensor":
        return tensors[raw] if kind_of is int and 0 <= raw < len(tensors) else NOT_QUICK
    if kind == "float":
        return raw if kind_of is float else NOT_QUICK
    if kind == "str":
        return raw if kind_of is str and len(raw) <= limits.max_string_bytes else NOT_QUICK
    if kind_of is not list or len(raw) > limits.max_list_length:
        return (
            DTYPES_BY_NAME.get(raw, NOT_QUICK) if kind == "dtype" and kind_of is str else NOT_QUICK
        )
    if kind == "ints":
        return tuple(raw) if all(type(x) is int for x in raw) else NOT_QUICK
    if kind == "floats":
        return tuple(raw) if all(type(x) is float for x in raw) else NOT_QUICK
    if kind == "strs":
        quick = all(type(x) is str and len(x) <= limits.max_string_bytes for x in raw)
        return tuple(raw) if quick else NOT_QUICK
    return NOT_QUICK


def checked_value(kind: str, raw, where: str, tensors: list, limits: Limits):
    if kind == "int":
        return need_int(raw, where)
    if kind == "float":
        return need_float(raw, where)
    if kind == "str":
        return need_str(raw, where, limits)
    if kind == "ints":
        return tuple(
            need_int(x, f"{where}[{i}]") for i, x in enumerate(need_list(raw, where, limits))
        )
    if kind == "floats":
        return tuple(
            need_float(x, f"{where}[{i}]") for i, x in enumerate(need_list(raw, where, limits))
        )
    if kind == "strs":
        return tuple(
            need_str(x, f"{where}[{i}]", limits)
            for i, x in enumerate(need_list(raw, where, limits))
        )
    if kind == "dtype":
        found = DTYPES_BY_NAME.get(need_str(raw, where, limits))
        if found is None:
            raise damaged(where, f"unknown dtype {raw[:20]!r}")
        return found
    if kind == "tensor":
        return tensors[need_int(raw, where, 0, len(tensors) - 1)]
    raise damaged(where, f"attribute kind {kind!r} is not a value kind")
