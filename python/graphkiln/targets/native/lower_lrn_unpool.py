# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""LRN -> kernel "LRN" (src/cpu/lrn.cpp): float32, across channels, alpha / size computed here
as ref does. MaxUnpool -> kernel "MaxUnpool" (src/cpu/max_unpool.cpp): any element type,
int64 / int32 indices read at run time; the pooled input's dims the indices count in are
computed here from kernel_shape / strides / pads, and Y's dims come from the static output
type (an output_shape input must be constant here: plans are made per its value)."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext, static_dims
from .lower_support import supports


def _lrn_ok(node: Node, ctx=None) -> bool:
    x, y = node.inputs[0].type, node.outputs[0].type
    return (
        x.dtype == DType.f32
        and y.dtype == DType.f32
        and len(x.dims) >= 2
        and tuple(y.dims) == tuple(x.dims)
        and int(node.attrs["size"]) >= 1
    )


@supports(_lrn_ok)
def lower_lrn(node: Node, ctx: LoweringContext) -> None:
    a = node.attrs
    size = int(a["size"])
    attrs = {
        "size": size,
        "alpha_over_size": float(a.get("alpha", 1e-4)) / size,
        "beta": float(a.get("beta", 0.75)),
        "bias": float(a.get("bias", 1.0)),
    }
    x = ctx.input(node.inputs[0])
    ctx.emit("LRN", [x], [ctx.output(node.outputs[0])], attrs, node.name)


def _source_dims(node: Node) -> list[int]:
    """The dims of the pooled input MaxUnpool's indices count positions in (as ref has them)."""
    dims = static_dims(node.inputs[0])
    n = len(dims) - 2
    a = node.attrs
    kernel = list(a["kernel_shape"])
    strides = list(a.get("strides") or (1,) * n)
    pads = list(a.get("pads") or (0,) * (2 * n))
    spatial = [(dims[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + n] for i in range(n)]
    return [int(d) for d in (*dims[:2], *spatial)]


def _max_unpool_ok(node: Node, ctx=None) -> bool:
    x, ind, y = node.inputs[0].type, node.inputs[1].type, node.outputs[0].type
    rank = len(x.dims)
    a = node.attrs
    n = rank - 2
    if ind.dtype not in (DType.i64, DType.i32) or y.dtype != x.dtype or rank < 3:
        return False
    if tuple(ind.dims) != tuple(x.dims) or len(y.dims) != rank:
        return False
    if len(a["kernel_shape"]) != n or len(a.get("strides") or (1,) * n) != n:
        return False
    if len(a.get("pads") or (0,) * (2 * n)) != 2 * n:
        return False
    shape = node.inputs[2] if len(node.inputs) > 2 else None
    if shape is not None and shape.constant is None:
        return False  # Y's dims decided by a value of the run
    return min(_source_dims(node)) >= 1


@supports(_max_unpool_ok)
def lower_max_unpool(node: Node, ctx: LoweringContext) -> None:
    ins = [ctx.input(node.inputs[0]), ctx.input(node.inputs[1])]
    attrs = {"source_dims": _source_dims(node)}
    ctx.emit("MaxUnpool", ins, [ctx.output(node.outputs[0])], attrs, node.name)


LOWERINGS = {"LRN": lower_lrn, "MaxUnpool": lower_max_unpool}
