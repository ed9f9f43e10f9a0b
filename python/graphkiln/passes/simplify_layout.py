# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Collapse layout chains: transpose pairs, identity transposes, reshape chains, and
Flatten / Squeeze / Unsqueeze of static shapes written as Reshape."""

from __future__ import annotations

from typing import cast

import numpy as np

from ..ir import Node, TensorType
from .rewrite import Rewriter, apply_rules


def _perm(node: Node) -> tuple[int, ...] | None:
    perm = node.attrs.get("perm")
    if perm is None:
        t = node.input(0).type
        if not isinstance(t, TensorType) or t.rank is None:
            return None
        return tuple(reversed(range(t.rank)))
    return tuple(perm)


# Transpose(x, identity perm) -> x
def identity_transpose(node: Node, rw: Rewriter):
    perm = _perm(node)
    return [node.inputs[0]] if perm is not None and perm == tuple(range(len(perm))) else None


# Transpose(Transpose(x, p), q) -> Transpose(x, p[q])
def transpose_pair(node: Node, rw: Rewriter):
    inner = node.input(0).producer
    if inner is None or inner.op != "Transpose":
        return None
    p, q = _perm(inner), _perm(node)
    if p is None or q is None:
        return None
    combined = tuple(p[i] for i in q)
    if combined == tuple(range(len(combined))):
        return [inner.inputs[0]]
    return [rw.emit("Transpose", inner.inputs[0], perm=combined)]


def _static_out(node: Node) -> tuple[int, ...] | None:
    t = node.output(0).type
    return cast("tuple[int, ...]", t.dims) if isinstance(t, TensorType) and t.is_static else None


# Reshape(Reshape(x, a), b) -> Reshape(x, b) ; Reshape(x, shape of x) -> x
# Flatten / Squeeze / Unsqueeze with a static result -> Reshape(x, result)
def as_reshape(node: Node, rw: Rewriter):
    dims = _static_out(node)
    if dims is None or 0 in dims:
        return None
    source = node.input(0)
    while source.producer is not None and source.producer.op in RESHAPES:
        source = source.producer.input(0)
    if isinstance(source.type, TensorType) and source.type.dims == dims:
        return [source]
    if node.op == "Reshape" and source is node.inputs[0]:
        return None
    shape = rw.constant(np.array(dims, dtype=np.int64), "shape")
    return [rw.emit("Reshape", source, shape)]


RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")

RULES = [("Transpose", identity_transpose), ("Transpose", transpose_pair)] + [
    (op, as_reshape) for op in RESHAPES
]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
