# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Recognize scaled dot-product attention (MatMul, scale, mask, Softmax, MatMul) on 4-D
heads as one Attention op."""

from __future__ import annotations

import numpy as np

from ..ir import Node, TensorType, Value
from .patterns import producer, rank_of, scalar, split_scalar_operand
from .rewrite import Rewriter, apply_rules
from .util import replace_uses


def _unscale(value: Value) -> tuple[Value, float]:
    """x * c (or x / c) with scalar constant c -> (x, c); anything else -> (value, 1)."""
    node = value.producer
    if node is not None and node.op in ("Mul", "Div"):
        split = split_scalar_operand(node)
        if split and (node.op == "Mul" or node.inputs[0] is split[0]) and split[1] != 0:
            return split[0], split[1] if node.op == "Mul" else 1.0 / split[1]
    return value, 1.0


def _nan_guard(probs: Value, rw: Rewriter) -> Value | None:
    """Where(IsNaN(p), 0, p) reading the softmax output, as exporters add for empty rows."""
    readers = rw.users_of(probs)
    isnan = next((n for n in readers if n.op == "IsNaN"), None)
    where = next((n for n in readers if n.op == "Where"), None)
    if len(readers) != 2 or isnan is None or where is None:
        return None
    if (
        where.inputs[0] is not isnan.outputs[0]
        or where.inputs[2] is not probs
        or scalar(where.inputs[1]) != 0
    ):
        return None
    return where.outputs[0]


# MatMul(Softmax(MatMul(q*a, kT*b) + mask), v) -> Attention(q, Transpose(kT), v, mask, scale=a*b)
def attention(node: Node, rw: Rewriter):
    axis = node.attrs.get("axis", -1)
    scores = node.input(0)
    if rank_of(scores) != 4 or axis not in (-1, 3):
        return None
    mask = None
    add = producer(scores, "Add")
    if add is not None and rw.only_user(scores) is node:
        for i in (0, 1):
            if producer(_unscale(add.input(i))[0], "MatMul") is not None:
                scores, mask = add.input(i), add.inputs[1 - i]
                break
    scores, post_scale = _unscale(scores)
    qk = producer(scores, "MatMul")
    if qk is None:
        return None
    q, scale_q = _unscale(qk.input(0))
    k_t, scale_k = _unscale(qk.input(1))
    probs = node.output(0)
    guarded = _nan_guard(probs, rw)
    result = guarded if guarded is not None else probs
    pv = rw.only_user(result)
    if pv is None or pv.op != "MatMul" or pv.inputs[0] is not result:
        return None
    v = pv.inputs[1]
    if not all(rank_of(t) == 4 for t in (q, k_t, v)):
        return None
    if mask is not None and rank_of(mask) not in (2, 3, 4):  # Attention masks are 2-D to 4-D
        return None
    rw.current = pv  # v may be computed after the Softmax: build the replacement at pv
    k = rw.emit("Transpose", k_t, perm=(0, 1, 3, 2))
    inputs = [q, k, v] + ([mask] if mask is not None else [])
    out = rw.emit("Attention", *inputs, scale=float(np.float32(scale_q * scale_k * post_scale)))
    if guarded is not None:
        pv_type = pv.output(0).type
        assert isinstance(pv_type, TensorType)  # the product of two 4-D tensors
        zero = rw.constant(np.zeros((), dtype=pv_type.dtype.numpy), "zero")
        out = rw.emit("Where", rw.emit("IsNaN", out), zero, out)
    replace_uses(rw.graph, pv.output(0), out)
    return [None]


RULES = [("Softmax", attention)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
