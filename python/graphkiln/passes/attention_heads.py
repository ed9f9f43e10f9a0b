# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Attention reads its heads where the projections wrote them.

Exported transformers split [B, S, H*D] projections into heads with Reshape [B, S, H, D]
and Transpose(0, 2, 1, 3), run attention on [B, H, S, D], and merge the result back with
the inverse Transpose and a Reshape. The transposes are copies. Attention's 3-D form
(q_num_heads / kv_num_heads) takes the [B, S, H*D] tensors as they are, so

    Attention(T(R(q)), T(R(k)), T(R(v)), mask)  ->  R'(Attention3d(q', k', v', mask))

where q' = Reshape(R(q), [B, S, H*D]) (a view of the projection) and R' reshapes the
[B, S, H*Dv] result to [B, S, H, Dv]; an output Transpose(0, 2, 1, 3) reader then reads that
view directly. Steps that take past state or return scores are left alone."""

from __future__ import annotations

import numpy as np

from ..ir import Node, Value
from .patterns import producer
from .rewrite import Rewriter, apply_rules
from .util import replace_uses

HEADS_PERM = (0, 2, 1, 3)


def _static_dims(value: Value) -> tuple[int, ...] | None:
    dims = getattr(value.type, "dims", None)
    if dims is None or not all(isinstance(d, int) for d in dims):
        return None
    return tuple(dims)


def _split_heads(value: Value | None) -> tuple[Value, tuple[int, ...]] | None:
    """value = Transpose(t, perm=(0, 2, 1, 3)) with t of static shape [B, S, H, D]."""
    node = producer(value, "Transpose")
    if node is None or tuple(node.attrs.get("perm", ())) != HEADS_PERM:
        return None
    data = node.input(0)
    dims = _static_dims(data)
    if dims is None or len(dims) != 4:
        return None
    return data, dims


def _reshape(rw: Rewriter, value: Value, dims) -> Value:
    return rw.emit("Reshape", value, rw.constant(np.array(dims, dtype=np.int64), "shape"))


def heads_in_place(node: Node, rw: Rewriter):
    if len(node.inputs) > 4 or sum(o is not None for o in node.outputs) != 1:
        return None
    if node.outputs[0] is None or node.attrs.get("q_num_heads") is not None:
        return None
    split = [_split_heads(x) for x in node.inputs[:3]]
    found = [s for s in split if s is not None]
    if len(found) != len(split):
        return None
    (tq, (b, s, heads, d)), (tk, dk), (tv, dv) = found
    if dk[0] != b or dv[0] != b or dk[2] != dv[2] or dk[1] != dv[1] or dk[3] != d:
        return None
    kv_heads, kv_seq, v_dim = dk[2], dk[1], dv[3]
    if heads % kv_heads:
        return None
    y = node.output(0)
    if _static_dims(y) != (b, heads, s, v_dim):
        return None
    q3 = _reshape(rw, tq, [b, s, heads * d])
    k3 = _reshape(rw, tk, [b, kv_seq, kv_heads * d])
    v3 = _reshape(rw, tv, [b, kv_seq, kv_heads * v_dim])
    mask = node.inputs[3:4]
    attrs = dict(node.attrs)
    attrs.update(q_num_heads=heads, kv_num_heads=kv_heads)
    y3 = rw.emit("Attention", q3, k3, v3, *mask, **attrs)
    y4 = _reshape(rw, y3, [b, s, heads, v_dim])
    _merge_in_place(rw, y, y4)
    return [rw.emit("Transpose", y4, perm=HEADS_PERM)]


def _only_reader(rw: Rewriter, value: Value, op: str) -> Node | None:
    node = rw.only_user(value)
    return node if node is not None and node.op == op else None


def _merge_in_place(rw: Rewriter, y: Value, y4: Value) -> None:
    """Readers of the merged heads, Transpose(0, 2, 1, 3)(y) -- or that of the NaN guard
    exporters put around attention, Where(IsNaN(y), c, y) -- read the view y4 instead."""
    guard = None
    readers = rw.users_of(y)
    if len(readers) == 2 and {n.op for n in readers} == {"IsNaN", "Where"}:
        isnan = next(n for n in readers if n.op == "IsNaN")
        guard = next(n for n in readers if n.op == "Where")
        if (
            guard.inputs[0] is not isnan.outputs[0]
            or guard.inputs[2] is not y
            or guard.input(1).constant is None
        ):
            return
        merged = guard.output(0)
    elif len(readers) == 1:
        merged = y
    else:
        return
    merge = _only_reader(rw, merged, "Transpose")
    if merge is None or tuple(merge.attrs.get("perm", ())) != HEADS_PERM:
        return
    out = y4
    if guard is not None:
        fill = rw.constant(np.asarray(guard.input(1).constant), "fill")  # defined before use
        out = rw.emit("Where", rw.emit("IsNaN", y4), fill, y4)
    replace_uses(rw.graph, merge.output(0), out)


RULES = [("Attention", heads_in_place)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
