# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Lookup in the importer table: which converter handles (op, opset)."""

from __future__ import annotations

from collections.abc import Callable

from .registry import FAMILIES

Converter = Callable | None


def _entries(spec) -> list[tuple[int, Converter]]:
    """An OPS value is (since, converter) or a list of them, one per opset range."""
    if isinstance(spec, tuple):
        return [spec]
    return sorted(spec, key=lambda e: e[0])


def build_table() -> dict[str, list[tuple[int, Converter]]]:
    table: dict[str, list[tuple[int, Converter]]] = {}
    for family in FAMILIES:
        for op, spec in family.OPS.items():
            if op in table:
                raise ValueError(f"ONNX op {op} is handled by two families")
            table[op] = _entries(spec)
    return table


TABLE = build_table()


def build_subgraph_inputs() -> dict:
    """(ONNX op, graph attribute) -> the function typing that subgraph's untyped inputs."""
    hooks: dict = {}
    for family in FAMILIES:
        hooks.update(getattr(family, "SUBGRAPH_INPUTS", {}))
    return hooks


SUBGRAPH_INPUTS = build_subgraph_inputs()


def find_converter(op: str, opset: int) -> tuple[bool, Converter]:
    """(found, converter) for `op` at `opset`; converter None means copy one to one."""
    entries = TABLE.get(op)
    if not entries:
        return False, None
    chosen = None
    for since, conv in entries:
        if since <= opset:
            chosen = (True, conv)
    return chosen if chosen else (False, None)


def supported_ops() -> dict[str, int]:
    """ONNX op name -> first opset graphkiln imports it at."""
    return {op: entries[0][0] for op, entries in sorted(TABLE.items())}
