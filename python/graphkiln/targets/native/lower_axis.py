# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Ops along one axis -> kernels "TopK", "Hardmax", "LpNormalization" (src/cpu/axis_ops.cpp),
and EyeLike (its output depends only on the static shape: a constant). TopK takes float32,
float64 and integer data (always sorted; k from the Values dims); Hardmax and
LpNormalization (p 1 or 2) float32 / float64."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from .lower import LoweringContext, static_dims
from .lower_support import supports

_FLOATS = frozenset({DType.f32, DType.f64})
_TOPK = _FLOATS | frozenset(
    {DType.i8, DType.i16, DType.i32, DType.i64, DType.u8, DType.u16, DType.u32, DType.u64}
)


def _dtype(v):
    return None if v is None else getattr(v.type, "dtype", None)


def _axis(node: Node, default: int) -> int:
    rank = len(node.inputs[0].type.dims)
    return int(node.attrs.get("axis", default)) % rank


def _ranked(node: Node) -> bool:
    return len(node.inputs[0].type.dims) > 0


def _topk_ok(node: Node, ctx=None) -> bool:
    return (
        _ranked(node)
        and _dtype(node.inputs[0]) in _TOPK
        and all(o is None or o.type is not None for o in node.outputs)
    )


@supports(_topk_ok)
def lower_topk(node: Node, ctx: LoweringContext) -> None:
    x = node.inputs[0]
    axis = _axis(node, -1)
    outs = []
    for i, v in enumerate(node.outputs[:2]):
        if v is not None:
            outs.append(ctx.output(v))
        else:
            other = node.outputs[1 - i]
            outs.append(ctx.temp((_dtype(x), DType.i64)[i], static_dims(other)))
    ctx.emit(
        "TopK",
        [ctx.input(x)],
        outs,
        {"axis": axis, "largest": int(node.attrs.get("largest", 1))},
        node.name,
    )


def _float_ok(node: Node, ctx=None) -> bool:
    if not _ranked(node) or _dtype(node.inputs[0]) not in _FLOATS:
        return False
    return node.op != "LpNormalization" or node.attrs.get("p", 2) in (1, 2)


@supports(_float_ok)
def lower_axis_unary(node: Node, ctx: LoweringContext) -> None:
    attrs = {"axis": _axis(node, -1)}
    if node.op == "LpNormalization":
        attrs["p"] = int(node.attrs.get("p", 2))
    ctx.emit(node.op, [ctx.input(node.inputs[0])], [ctx.output(node.outputs[0])], attrs, node.name)


def _eye_ok(node: Node, ctx=None) -> bool:
    return len(node.inputs[0].type.dims) == 2 and _dtype(node.outputs[0]) is not None


@supports(_eye_ok)
def lower_eye_like(node: Node, ctx: LoweringContext) -> None:
    rows, cols = static_dims(node.inputs[0])
    out = node.outputs[0]
    eye = np.eye(rows, cols, int(node.attrs.get("k", 0) or 0), dtype=_dtype(out).numpy)
    if ctx.is_graph_output(out):
        ctx.emit("Copy", [ctx.constant(eye)], [ctx.output(out)], {}, node.name)
    else:
        ctx.constant(eye, value=out)


LOWERINGS = {
    "TopK": lower_topk,
    "Hardmax": lower_axis_unary,
    "LpNormalization": lower_axis_unary,
    "EyeLike": lower_eye_like,
}
