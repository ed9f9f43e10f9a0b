# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Typed field access for untrusted documents: each helper returns the field or raises
FormatError naming where in the document it is and what was expected."""

from __future__ import annotations

import reprlib

from ..errors import FormatError
from .limits import Limits


def damaged(where: str, problem: str) -> FormatError:
    return FormatError(f"damaged file: {where}: {problem}")


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 2, 40, 40


def describe(obj) -> str:
    """A short text of an unexpected field (never the repr of a whole subtree)."""
    return f"{type(obj).__name__} {_SHORT.repr(obj)[:60]}"


def need_dict(obj, where: str, required=(), optional=()) -> dict:
    if not isinstance(obj, dict):
        raise damaged(where, f"expected a map, got {describe(obj)}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise damaged(where, f"missing field(s) {missing}")
    unknown = [k for k in obj if k not in required and k not in optional]
    if unknown:
        raise damaged(where, f"unknown field(s) {[str(k)[:40] for k in unknown]}")
    return obj


def need_list(obj, where: str, limits: Limits, length: int | None = None) -> list:
    if not isinstance(obj, list):
        raise damaged(where, f"expected a list, got {describe(obj)}")
    if len(obj) > limits.max_list_length:
        raise damaged(where, f"list of {len(obj)} items is over the limit {limits.max_list_length}")
    if length is not None and len(obj) != length:
        raise damaged(where, f"expected {length} items, got {len(obj)}")
    return obj


def need_int(obj, where: str, low: int | None = None, high: int | None = None) -> int:
    if not isinstance(obj, int) or isinstance(obj, bool):
        raise damaged(where, f"expected an integer, got {describe(obj)}")
    if (low is not None and obj < low) or (high is not None and obj > high):
        raise damaged(where, f"{obj} is outside [{low}, {high}]")
    return obj


def need_float(obj, where: str) -> float:
    """A float; non-finite values are written as the strings "nan", "inf" and "-inf"."""
    if isinstance(obj, float):
        return obj
    if isinstance(obj, int) and not isinstance(obj, bool):
        return float(obj)
    if obj in ("nan", "inf", "-inf"):
        return float(obj)
    raise damaged(where, f"expected a float, got {describe(obj)}")


def need_str(obj, where: str, limits: Limits) -> str:
    if not isinstance(obj, str):
        raise damaged(where, f"expected a string, got {describe(obj)}")
    if len(obj) > limits.max_string_bytes:
        raise damaged(where, f"string of {len(obj)} characters is over the limit")
    return obj


def float_to_document(value: float):
    """The inverse of need_float: finite floats as is, others as strings (valid JSON)."""
    value = float(value)
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return value
