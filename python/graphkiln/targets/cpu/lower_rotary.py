# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""RotaryEmbedding -> kernel "RotaryEmbedding" (src/cpu/rotary.cpp): float32, 4-D
(batch, heads, seq, head) or 3-D (batch, seq, heads * head) input with num_heads; the
lowering passes the (batch, seq, heads, head) strides of x."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from ..native.lower import LoweringContext, static_dims
from ..native.lower_support import supports


def _dtype(v):
    return None if v is None else getattr(v.type, "dtype", None)


def _view(node: Node):
    """(batch, seq, heads, head, strides over (b, s, h, d)) or None."""
    dims = tuple(node.inputs[0].type.dims)
    if len(dims) == 4:
        b, h, s, d = dims
        return b, s, h, d, [h * s * d, d, s * d, 1]
    if len(dims) == 3:
        heads = node.attrs.get("num_heads")
        b, s, hidden = dims
        if not heads or hidden % int(heads):
            return None
        h = int(heads)
        d = hidden // h
        return b, s, h, d, [s * hidden, hidden, d, 1]
    return None


def _rotary_ok(node: Node, ctx=None) -> bool:
    if any(_dtype(v) != DType.f32 for v in (*node.inputs[:3], node.outputs[0])):
        return False
    view = _view(node)
    if view is None:
        return False
    b, s, _, d, _ = view
    dim = int(node.attrs.get("rotary_embedding_dim") or 0) or d
    cos = tuple(node.inputs[1].type.dims)
    if (
        dim % 2
        or dim > d
        or len(cos) != 2 + (len(node.inputs) < 4 or node.inputs[3] is None)
        or cos[-1] < dim // 2
        or tuple(node.inputs[2].type.dims) != cos
    ):
        return False
    pos = node.inputs[3] if len(node.inputs) > 3 else None
    if pos is None:
        return cos[:2] == (b, s)
    return (
        _dtype(pos) in (DType.i64, DType.i32)
        and int(np.prod(pos.type.dims, dtype=np.int64)) == b * s
    )


@supports(_rotary_ok)
def lower_rotary(node: Node, ctx: LoweringContext) -> None:
    static_dims(node.inputs[0])
    b, s, h, d, strides = _view(node)
    dim = int(node.attrs.get("rotary_embedding_dim") or 0) or d
    inputs = [ctx.input(v) for v in node.inputs[:3]]
    pos = node.inputs[3] if len(node.inputs) > 3 else None
    inputs.append(ctx.input(pos) if pos is not None else None)
    ctx.emit(
        "RotaryEmbedding",
        inputs,
        [ctx.output(node.outputs[0])],
        {
            "batch": b,
            "seq": s,
            "heads": h,
            "head": d,
            "dim": dim,
            "interleaved": int(node.attrs.get("interleaved") or 0),
            "x_strides": strides,
        },
        node.name,
    )


LOWERINGS = {"RotaryEmbedding": lower_rotary}
