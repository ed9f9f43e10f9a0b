# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Reductions on the gpu target: Reduce*, global pooling, Softmax, LogSoftmax and
LayerNormalization, each as data seen as [outer, len, inner] (the reduced axes must be
adjacent once size-1 dims are ignored). Float32, float16 or bfloat16 (the result of the
input's type, float32 arithmetic in the kernels; LayerNormalization's mean and inverse
standard deviation outputs float32); ArgMax / ArgMin float32."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from ..native.lower import LoweringContext, static_dims

REDUCE_OPS = {
    "ReduceSum": "sum",
    "ReduceMean": "mean",
    "ReduceMax": "max",
    "ReduceMin": "min",
    "ReduceProd": "prod",
    "ReduceL1": "l1",
    "ReduceL2": "l2",
    "ReduceSumSquare": "sum_square",
    "ReduceLogSum": "log_sum",
    "ReduceLogSumExp": "log_sum_exp",
    "GlobalAveragePool": "mean",
    "GlobalMaxPool": "max",
}


FLOATS = (DType.f32, DType.f16, DType.bf16)


def _prod(xs) -> int:
    return int(np.prod(xs, dtype=np.int64))


def _float(node: Node, ctx=None) -> bool:
    """Input 0 and output 0 of one float type."""
    return (
        node.inputs[0].type.dtype in FLOATS
        and node.outputs[0].type.dtype == node.inputs[0].type.dtype
    )


def _axes(node: Node, rank: int) -> list[int] | None:
    """The reduced axes; [] means none (a copy); None when they are not known."""
    if node.op.startswith("Global"):
        return list(range(2, rank))
    axes = node.attrs.get("axes")
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        data = node.inputs[1].constant
        if data is None:
            return None
        axes = [int(a) for a in np.asarray(data).reshape(-1)]
    if not axes:
        return [] if node.attrs.get("noop_with_empty_axes") else list(range(rank))
    return sorted({a % rank for a in axes})


def _sizes(dims, axes) -> tuple[int, int, int] | None:
    """(outer, len, inner) or None when the reduced axes are not adjacent."""
    live = [a for a in axes if dims[a] != 1]
    if not live:
        return int(np.prod(dims, dtype=np.int64)), 1, 1
    first, last = live[0], live[-1]
    if any(dims[i] != 1 and i not in axes for i in range(first, last + 1)):
        return None
    return _prod(dims[:first]), _prod([dims[a] for a in live]), _prod(dims[last + 1 :])


def lower_reduce(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    axes = _axes(node, len(dims))
    src = ctx.input(node.inputs[0])
    out = ctx.output(node.outputs[0])
    if not axes:
        ctx.emit("Copy", [ctx.alias(None, src, static_dims(node.outputs[0]))], [out], {}, node.name)
        return
    outer, length, inner = _sizes(dims, axes)
    ctx.emit(
        "Reduce",
        [src],
        [out],
        {"op": REDUCE_OPS[node.op], "outer": outer, "len": length, "inner": inner},
        node.name,
    )


def _reduce_ok(node: Node, ctx=None) -> bool:
    if not _float(node):
        return False
    dims = static_dims(node.inputs[0])
    axes = _axes(node, len(dims))
    return axes is not None and (not axes or _sizes(dims, axes) is not None)


def lower_softmax(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    axis = node.attrs.get("axis", -1) % len(dims)
    ctx.emit(
        node.op,
        [ctx.input(node.inputs[0])],
        [ctx.output(node.outputs[0])],
        {"outer": _prod(dims[:axis]), "len": dims[axis], "inner": _prod(dims[axis + 1 :])},
        node.name,
    )


def _full(ctx: LoweringContext, value, dims_tail):
    """A slot holding `value` broadcast to dims_tail (constants are expanded here)."""
    if value is None:
        return None
    if static_dims(value) == tuple(dims_tail):
        return ctx.input(value)
    data = np.broadcast_to(np.asarray(value.constant, value.type.dtype.numpy), dims_tail)
    return ctx.constant(np.ascontiguousarray(data))


def _layer_norm_parts(node: Node, ctx: LoweringContext) -> tuple[int, int | None, dict]:
    """A LayerNormalization node's scale and bias slots (expanded to the normalized dims)
    and its step attributes."""
    dims = static_dims(node.inputs[0])
    axis = node.attrs.get("axis", -1) % len(dims)
    tail = tuple(dims[axis:])
    scale = _full(ctx, node.inputs[1], tail)
    bias = _full(ctx, node.inputs[2] if len(node.inputs) > 2 else None, tail)
    return (
        scale,
        bias,
        {
            "rows": int(np.prod(dims[:axis], dtype=np.int64)),
            "len": int(np.prod(tail, dtype=np.int64)),
            "epsilon": float(node.attrs.get("epsilon", 1e-5)),
        },
    )


def lower_layer_norm(node: Node, ctx: LoweringContext) -> None:
    scale, bias, attrs = _layer_norm_parts(node, ctx)
    outputs = [ctx.output(node.outputs[0])]
    stats = [v for v in node.outputs[1:3]] + [None] * (3 - len(node.outputs))
    if any(v is not None for v in stats):
        dims = static_dims(node.inputs[0])
        axis = node.attrs.get("axis", -1) % len(dims)
        rows = dims[:axis] + (1,) * (len(dims) - axis)
        outputs += [ctx.output(v) if v is not None else ctx.temp(DType.f32, rows) for v in stats]
    ctx.emit(
        "LayerNormalization", [ctx.input(node.inputs[0]), scale, bias], outputs, attrs, node.name
    )


def lower_residual_layer_norm(node: Node, nodes: list[Node], ctx: LoweringContext) -> bool:
    """The body `nodes` of a Fused(kind=reduce) node start with Add(a, b) and a
    LayerNormalization of the sum (a residual connection, as transformers have after each
    block): one LayerNormalization step reading a and b (its input 3), the sum never written;
    the caller lowers the rest of the body (an epilogue). False (nothing emitted) otherwise."""
    if node.attrs.get("kind") != "reduce" or len(nodes) < 2:
        return False
    add, norm = nodes[:2]
    if add.op != "Add" or norm.op != "LayerNormalization":
        return False
    total = add.outputs[0]
    body = node.attrs["body"]
    readers = [n for n in nodes if total in n.inputs]
    if readers != [norm] or norm.inputs[0] is not total or total in body.outputs:
        return False
    if any(v is not None for v in norm.outputs[1:]) or not _layer_norm_ok(norm):
        return False
    dims = static_dims(total)
    if any(static_dims(v) != dims or v.type.dtype != total.type.dtype for v in add.inputs):
        return False
    scale, bias, attrs = _layer_norm_parts(norm, ctx)
    if norm.outputs[0] is body.outputs[0]:  # no epilogue: straight into the node's output
        out = ctx.output(node.outputs[0])
        ctx.bind(norm.outputs[0], out)
    else:
        out = ctx.output(norm.outputs[0])
    ctx.emit(
        "LayerNormalization",
        [ctx.input(add.inputs[0]), scale, bias, ctx.input(add.inputs[1])],
        [out],
        attrs,
        node.name,
    )
    return True


def _layer_norm_ok(node: Node, ctx=None) -> bool:
    dtype = node.inputs[0].type.dtype
    if dtype not in FLOATS or node.outputs[0].type.dtype != dtype:
        return False
    if any(v is not None and v.type.dtype != DType.f32 for v in node.outputs[1:]):
        return False
    dims = static_dims(node.inputs[0])
    tail = tuple(dims[node.attrs.get("axis", -1) % len(dims) :])
    for v in node.inputs[1:]:
        if v is not None and static_dims(v) != tail and v.constant is None:
            return False
        if v is not None and v.type.dtype != dtype:
            return False
    return True


def lower_rms_norm(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    axis = node.attrs.get("axis", -1) % len(dims)
    tail = tuple(dims[axis:])
    ctx.emit(
        "LayerNormalization",
        [ctx.input(node.inputs[0]), _full(ctx, node.inputs[1], tail), None],
        [ctx.output(node.outputs[0])],
        {
            "rows": int(np.prod(dims[:axis], dtype=np.int64)),
            "len": int(np.prod(tail, dtype=np.int64)),
            "epsilon": float(node.attrs.get("epsilon", 1e-5)),
            "rms": 1,
        },
        node.name,
    )


def lower_arg_reduce(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    axis = node.attrs.get("axis", 0) % len(dims)
    ctx.emit(
        "ArgReduce",
        [ctx.input(node.inputs[0])],
        [ctx.output(node.outputs[0])],
        {
            "outer": _prod(dims[:axis]),
            "len": dims[axis],
            "inner": _prod(dims[axis + 1 :]),
            "is_max": int(node.op == "ArgMax"),
            "select_last_index": int(node.attrs.get("select_last_index") or 0),
        },
        node.name,
    )


def _arg_ok(node: Node, ctx=None) -> bool:
    return node.inputs[0].type.dtype == DType.f32 and len(static_dims(node.inputs[0])) > 0


lower_reduce.supports = _reduce_ok
lower_rms_norm.supports = _layer_norm_ok
lower_arg_reduce.supports = _arg_ok
lower_softmax.supports = _float
lower_layer_norm.supports = _layer_norm_ok

LOWERINGS = {op: lower_reduce for op in REDUCE_OPS}
LOWERINGS.update(
    {
        "Softmax": lower_softmax,
        "LogSoftmax": lower_softmax,
        "LayerNormalization": lower_layer_norm,
        "RMSNormalization": lower_rms_norm,
        "ArgMax": lower_arg_reduce,
        "ArgMin": lower_arg_reduce,
    }
)
