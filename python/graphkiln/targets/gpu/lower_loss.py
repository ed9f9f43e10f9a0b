# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""NegativeLogLikelihoodLoss -> kernel of that name (src/gpu/loss.hip: float32 / float64
input [N, C, d...], int32 / int64 target, optional weight [C], reduction none / sum / mean,
ignore_index); SoftmaxCrossEntropyLoss (float32) -> LogSoftmax over axis 1 (its log_prob
output, or a temporary) then the same kernel."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from ..native.lower import LoweringContext, static_dims

_FLOATS = (DType.f32, DType.f64)


def _dtype(v):
    return None if v is None else getattr(v.type, "dtype", None)


def _loss_ok(node: Node, ctx=None) -> bool:
    x, t = node.inputs[0], node.inputs[1]
    w = node.inputs[2] if len(node.inputs) > 2 else None
    floats = (DType.f32,) if node.op == "SoftmaxCrossEntropyLoss" else _FLOATS
    if _dtype(x) not in floats or _dtype(t) not in (DType.i32, DType.i64):
        return False
    if w is not None and _dtype(w) != _dtype(x):
        return False
    if node.attrs.get("reduction", "mean") not in ("none", "sum", "mean"):
        return False
    return len(x.type.dims) >= 2


def _emit_nll(node: Node, ctx: LoweringContext, x_slot: int) -> None:
    ignore = node.attrs.get("ignore_index")
    w = node.inputs[2] if len(node.inputs) > 2 else None
    inputs = [x_slot, ctx.input(node.inputs[1])] + ([] if w is None else [ctx.input(w)])
    attrs = {
        "reduction": node.attrs.get("reduction", "mean"),
        "has_ignore": int(ignore is not None),
        "ignore_index": int(ignore or 0),
    }
    ctx.emit("NegativeLogLikelihoodLoss", inputs, [ctx.output(node.outputs[0])], attrs, node.name)


def lower_nll(node: Node, ctx: LoweringContext) -> None:
    static_dims(node.inputs[0])
    _emit_nll(node, ctx, ctx.input(node.inputs[0]))


def lower_sce(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    log_prob = node.outputs[1] if len(node.outputs) > 1 else None
    lp = ctx.output(log_prob) if log_prob is not None else ctx.temp(DType.f32, dims)
    prod = lambda xs: int(np.prod(xs, dtype=np.int64))  # noqa: E731
    ctx.emit(
        "LogSoftmax",
        [ctx.input(node.inputs[0])],
        [lp],
        {"outer": dims[0], "len": dims[1], "inner": prod(dims[2:])},
        f"{node.name}/log_prob",
    )
    _emit_nll(node, ctx, lp)


lower_nll.supports = _loss_ok
lower_sce.supports = _loss_ok

LOWERINGS = {"NegativeLogLikelihoodLoss": lower_nll, "SoftmaxCrossEntropyLoss": lower_sce}
