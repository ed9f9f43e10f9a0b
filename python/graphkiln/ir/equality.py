# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Structural equality of graphs: same ops, attributes, wiring and types; names ignored."""

from __future__ import annotations

import numpy as np

from .graph import Graph, Value


def structural_diff(a: Graph, b: Graph) -> str | None:
    """None when equal, else a sentence saying where the graphs first differ."""
    return _diff(a, b, {})


def _diff(a: Graph, b: Graph, mapping: dict[Value, Value]) -> str | None:
    if len(a.inputs) != len(b.inputs):
        return f"graph {a.name}: {len(a.inputs)} inputs vs {len(b.inputs)}"
    for x, y in zip(a.inputs, b.inputs):
        if x.type != y.type:
            return f"input {x.name}: {x.type} vs {y.type}"
        mapping[x] = y
    if len(a.nodes) != len(b.nodes):
        return (
            f"graph {a.name}: {len(a.nodes)} nodes vs {len(b.nodes)}\n"
            f"  {[n.op for n in a.nodes]}\n  {[n.op for n in b.nodes]}"
        )
    for i, (m, n) in enumerate(zip(a.nodes, b.nodes)):
        where = f"node {i} ({m.op})"
        if m.op != n.op:
            return f"{where}: op {m.op} vs {n.op}"
        ins = [None if v is None else mapping.get(v, v) for v in m.inputs]
        if len(ins) != len(n.inputs) or any(x is not y for x, y in zip(ins, n.inputs)):
            return f"{where}: inputs wired differently"
        if set(m.attrs) != set(n.attrs):
            return f"{where}: attributes {sorted(m.attrs)} vs {sorted(n.attrs)}"
        for key in m.attrs:
            x, y = m.attrs[key], n.attrs[key]
            if isinstance(x, Graph):
                if not isinstance(y, Graph):
                    return f"{where}: attribute {key} is a graph in one only"
                sub = _diff(x, y, mapping)
                if sub:
                    return f"{where} attribute {key}: {sub}"
            elif isinstance(x, np.ndarray):
                if not (
                    isinstance(y, np.ndarray)
                    and x.dtype == y.dtype
                    and x.shape == y.shape
                    and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
                ):
                    return f"{where}: attribute {key} differs"
            elif x != y:
                return f"{where}: attribute {key} = {x!r} vs {y!r}"
        if len(m.outputs) != len(n.outputs):
            return f"{where}: output count differs"
        for xo, yo in zip(m.outputs, n.outputs):
            if (xo is None) != (yo is None):
                return f"{where}: an output is omitted in one only"
            if xo is not None and yo is not None:
                if xo.type != yo.type:
                    return f"{where}: output type {xo.type} vs {yo.type}"
                mapping[xo] = yo
    outs = [mapping.get(v, v) for v in a.outputs]
    if len(outs) != len(b.outputs) or any(x is not y for x, y in zip(outs, b.outputs)):
        return f"graph {a.name}: outputs differ"
    return None
