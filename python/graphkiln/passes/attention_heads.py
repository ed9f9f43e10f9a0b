# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Attention reads its heads where the projections wrote them.

Exported transformers split [B, S, H*D] projections into heads with Reshape [B, S, H, D]
and Transpose(0, 2, 1, 3), run attention on [B, H, S, D], and merge the result back with
the inverse Transpose and a Reshape. The transposes are copies. Attention's 3-D form
(q_num_heads / kv_num_heads) takes the [B, S, H*D] tensors as they are, so

    Attention(T(R(q)), T(R(k)), T(R(v)), mask)  ->  R'(Attention3d(q', k', v', mask))

where q' = Reshape(R(q), [0, 0, H*D]) (a view of the projection) and R' reshapes the
[B, S, H*Dv] result to [0, 0, H, Dv]; an output Transpose(0, 2, 1, 3) reader then reads that
view directly. Only the head counts and sizes need be static: the reshapes copy the batch and
sequence dims (ONNX Reshape's 0), so graphs with a symbolic batch or sequence -- every
exported transformer -- qualify. Steps that take past state or return scores are left
alone."""

from __future__ import annotations

import numpy as np

from ..ir import Node, Value
from .patterns import producer
from .rewrite import Rewriter, apply_rules
from .util import replace_uses

HEADS_PERM = (0, 2, 1, 3)


def _heads_dims(value: Value) -> tuple | None:
    """The dims of a 4-D value whose last two (heads, features) are static; the first two
    (batch, sequence) may be symbolic."""
    dims = getattr(value.type, "dims", None)
    if dims is None or len(dims) != 4 or not all(isinstance(d, int) for d in dims[2:]):
        return None
    return tuple(dims)


def _same(a, b) -> bool:
    """Dims that cannot differ: equal ints or the same symbol. Unequal symbols may still be
    equal at run time (Attention requires it there), but the rewrite does not rely on it."""
    return a == b


def _split_heads(value: Value | None) -> tuple[Value, tuple] | None:
    """value = Transpose(t, perm=(0, 2, 1, 3)) with t of shape [B, S, H, D], H and D static."""
    node = producer(value, "Transpose")
    if node is None or tuple(node.attrs.get("perm", ())) != HEADS_PERM:
        return None
    dims = _heads_dims(node.input(0))
    return None if dims is None else (node.input(0), dims)


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
    if not (_same(dk[0], b) and _same(dv[0], b) and _same(dk[1], dv[1])):
        return None
    if dk[2] != dv[2] or dk[3] != d:
        return None
    kv_heads, v_dim = dk[2], dv[3]
    if heads % kv_heads:
        return None
    y = node.output(0)
    y_dims = getattr(y.type, "dims", None)
    if y_dims is None or len(y_dims) != 4 or (y_dims[1], y_dims[3]) != (heads, v_dim):
        return None
    if not (_same(y_dims[0], b) and _same(y_dims[2], s)):
        return None
    # 0: the batch and sequence dims as the input has them (static or not)
    q3 = _reshape(rw, tq, [0, 0, heads * d])
    k3 = _reshape(rw, tk, [0, 0, kv_heads * d])
    v3 = _reshape(rw, tv, [0, 0, kv_heads * v_dim])
    mask = node.inputs[3:4]
    attrs = dict(node.attrs)
    attrs.update(q_num_heads=heads, kv_num_heads=kv_heads)
    y3 = rw.emit("Attention", q3, k3, v3, *mask, **attrs)
    y4 = _reshape(rw, y3, [0, 0, heads, v_dim])
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
