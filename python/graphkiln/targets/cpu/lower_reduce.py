# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Reductions and normalizations -> kernels "Reduce", "ArgReduce", "Softmax" and
"LayerNormalization" (src/cpu/reduce.cpp, normalize.cpp), and Fused nodes of kind "reduce":
the pointwise prologue (into a temporary), the reduction, the pointwise epilogue."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir import DType, Node, Value
from ...passes.op_classes import REDUCTIONS
from ..native.lower import LoweringContext, LoweringError, static_dims
from ..native.lower_pointwise import emit_pointwise, pointwise_supported
from ..native.lower_support import supports
from ..native.plan import CHANNELS_LAST, PLAIN

_REDUCE_OPS = {
    "ReduceSum": "sum",
    "ReduceMean": "mean",
    "ReduceMax": "max",
    "ReduceMin": "min",
    "ReduceProd": "prod",
    "ReduceL1": "l1",
    "ReduceL2": "l2",
    "ReduceLogSum": "log_sum",
    "ReduceLogSumExp": "log_sum_exp",
    "ReduceSumSquare": "sum_square",
}
_INT_OK = {"sum", "max", "min", "prod", "l1", "sum_square"}
_ANY = (PLAIN, CHANNELS_LAST)

# (value, layouts) -> slot id
SlotOf = Callable[[Value, tuple], int]


def _dtype(v: Value | None):
    return None if v is None else getattr(v.type, "dtype", None)


def _rank(v: Value) -> int:
    return len(v.type.dims)


def _reduce_axes(node: Node) -> list[int] | None:
    """The normalized, sorted axes reduced (all when empty unless a no-op); None when the
    axes input is not a constant."""
    rank = _rank(node.inputs[0])
    axes_value = node.inputs[1] if len(node.inputs) > 1 else None
    if axes_value is not None:
        data = axes_value.constant
        if data is None:
            return None
        axes = [int(a) for a in np.asarray(data).reshape(-1)]
    else:
        axes = []
    if not axes:
        return [] if node.attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    return sorted({a % rank for a in axes}) if rank else []


def _reduce_ok(node: Node, ctx=None) -> bool:
    dtype = _dtype(node.inputs[0])
    if _reduce_axes(node) is None or _dtype(node.outputs[0]) != dtype:
        return False
    if dtype in (DType.f32, DType.f64):
        return True
    return dtype in (DType.i32, DType.i64) and _REDUCE_OPS[node.op] in _INT_OK


def _is_global_pool(ctx: LoweringContext, node: Node, src: int, axes) -> bool:
    slot = ctx.slot(src)
    rank = len(slot.dims)
    return (
        _REDUCE_OPS[node.op] in ("mean", "max")
        and slot.layout == CHANNELS_LAST
        and slot.dtype == DType.f32
        and rank >= 3
        and list(axes) == [a for a in range(2, rank) if slot.dims[a] != 1]
        and int(np.prod(slot.dims[2:])) > 1
    )


def _emit_reduce(ctx: LoweringContext, node: Node, slot_of: SlotOf, out: int) -> None:
    axes = _reduce_axes(node)
    src = slot_of(node.inputs[0], _ANY)
    dims = ctx.slot(src).dims
    axes = [a for a in axes if dims[a] != 1] if axes else axes
    if not axes:  # nothing to reduce: a copy with the output's dims
        view = ctx.alias(None, src, ctx.slot(out).dims) if ctx.slot(src).layout == PLAIN else None
        if view is None:
            plain = ctx.temp(ctx.slot(src).dtype, dims)
            ctx.emit("Copy", [src], [plain], {}, node.name + "/plain")
            view = ctx.alias(None, plain, ctx.slot(out).dims)
        if _REDUCE_OPS[node.op] in ("sum", "mean", "max", "min", "prod"):
            ctx.emit("Copy", [view], [out], {}, node.name)
            return
        axes = []  # l1, l2, ... of one element: let the kernel apply its function
    if _is_global_pool(ctx, node, src, axes):
        # the mean / max over every spatial axis of channels-last data (a squeeze-and-
        # excitation's x.mean((2, 3))): the GlobalPool kernel reads it channel-contiguous
        mode = "avg" if _REDUCE_OPS[node.op] == "mean" else "max"
        ctx.emit("GlobalPool", [src], [out], {"mode": mode}, node.name)
        return
    ctx.emit("Reduce", [src], [out], {"op": _REDUCE_OPS[node.op], "axes": axes}, node.name)


def _arg_ok(node: Node, ctx=None) -> bool:
    return _dtype(node.inputs[0]) in (DType.f32, DType.f64, DType.i32, DType.i64) and all(
        d != 0 for d in node.inputs[0].type.dims
    )


def _emit_arg(ctx: LoweringContext, node: Node, slot_of: SlotOf, out: int) -> None:
    src = slot_of(node.inputs[0], _ANY)
    rank = len(ctx.slot(src).dims)
    ctx.emit(
        "ArgReduce",
        [src],
        [out],
        {
            "axis": int(node.attrs.get("axis", 0)) % max(rank, 1),
            "select_last_index": int(node.attrs.get("select_last_index", 0)),
            "max": int(node.op == "ArgMax"),
        },
        node.name,
    )


def _softmax_ok(node: Node, ctx=None) -> bool:
    return _dtype(node.inputs[0]) == DType.f32 and _rank(node.inputs[0]) >= 1


def _emit_softmax(ctx: LoweringContext, node: Node, slot_of: SlotOf, out: int) -> None:
    src = slot_of(node.inputs[0], (PLAIN,))
    rank = len(ctx.slot(src).dims)
    ctx.emit(
        "Softmax",
        [src],
        [out],
        {"axis": int(node.attrs.get("axis", -1)) % rank, "log": int(node.op == "LogSoftmax")},
        node.name,
    )


def _layernorm_ok(node: Node, ctx=None) -> bool:
    x = node.inputs[0]
    if _dtype(x) != DType.f32 or node.attrs.get("stash_type", 1) != 1 or _rank(x) == 0:
        return False
    axis = int(node.attrs.get("axis", -1)) % _rank(x)
    tail = tuple(x.type.dims[axis:])
    k = int(np.prod(tail, dtype=np.int64))
    for v in node.inputs[1:3]:
        if v is None:
            continue
        if _dtype(v) != DType.f32:
            return False
        size = int(np.prod(v.type.dims, dtype=np.int64))
        if size != k and v.constant is None:
            return False
    return all(o is None or _dtype(o) == DType.f32 for o in node.outputs[1:])


def _emit_layernorm(ctx: LoweringContext, node: Node, slot_of: SlotOf, outs: list[int]) -> None:
    x = node.inputs[0]
    src = slot_of(x, (PLAIN,))
    dims = ctx.slot(src).dims
    axis = int(node.attrs.get("axis", -1)) % len(dims)
    tail = tuple(dims[axis:])
    k = int(np.prod(tail, dtype=np.int64))
    params = []
    for v in (list(node.inputs[1:3]) + [None, None])[:2]:
        if v is None:
            params.append(None)
            continue
        size = int(np.prod(v.type.dims, dtype=np.int64))
        if size == k:
            params.append(slot_of(v, (PLAIN,)))
        else:
            full = np.broadcast_to(np.asarray(v.constant, np.float32), tail)
            params.append(ctx.constant(np.ascontiguousarray(full)))
    ctx.emit(
        "LayerNormalization",
        [src, params[0], params[1]],
        outs,
        {"axis": axis, "epsilon": float(node.attrs.get("epsilon", 1e-5))},
        node.name,
    )


def _stats_outputs(ctx: LoweringContext, node: Node, y_slot: int, output) -> list[int]:
    """Y's slot and, when Mean / InvStdDev are used, theirs (a temporary fills a gap)."""
    outs = [y_slot]
    extra = list(node.outputs[1:3])
    while extra and extra[-1] is None:
        extra.pop()
    x_dims = static_dims(node.inputs[0])
    axis = int(node.attrs.get("axis", -1)) % len(x_dims)
    stat_dims = tuple(x_dims[:axis]) + (1,) * (len(x_dims) - axis)
    for v in extra:
        outs.append(output(v) if v is not None else ctx.temp(DType.f32, stat_dims))
    return outs


# -- standalone lowerings --------------------------------------------------------------------


def _standalone_slot_of(ctx: LoweringContext) -> SlotOf:
    return lambda v, layouts: ctx.input(v, layouts=layouts)


@supports(_reduce_ok)
def lower_reduce(node: Node, ctx: LoweringContext) -> None:
    _emit_reduce(ctx, node, _standalone_slot_of(ctx), ctx.output(node.outputs[0]))


@supports(_arg_ok)
def lower_arg(node: Node, ctx: LoweringContext) -> None:
    _emit_arg(ctx, node, _standalone_slot_of(ctx), ctx.output(node.outputs[0]))


@supports(_softmax_ok)
def lower_softmax(node: Node, ctx: LoweringContext) -> None:
    _emit_softmax(ctx, node, _standalone_slot_of(ctx), ctx.output(node.outputs[0]))


@supports(_layernorm_ok)
def lower_layernorm(node: Node, ctx: LoweringContext) -> None:
    outs = _stats_outputs(ctx, node, ctx.output(node.outputs[0]), ctx.output)
    _emit_layernorm(ctx, node, _standalone_slot_of(ctx), outs)


_CHECKS = {
    **{op: _reduce_ok for op in _REDUCE_OPS},
    "Softmax": _softmax_ok,
    "LogSoftmax": _softmax_ok,
    "LayerNormalization": _layernorm_ok,
    "ArgMax": _arg_ok,
    "ArgMin": _arg_ok,
}
_EMITS = {
    **{op: _emit_reduce for op in _REDUCE_OPS},
    "Softmax": _emit_softmax,
    "LogSoftmax": _emit_softmax,
    "ArgMax": _emit_arg,
    "ArgMin": _emit_arg,
}


# -- Fused kind "reduce" ---------------------------------------------------------------------


def _split(body) -> tuple[list[Node], Node, list[Node]] | None:
    nodes = [n for n in body.nodes if n.op != "Constant"]
    anchors = [i for i, n in enumerate(nodes) if n.op in REDUCTIONS or n.op in _CHECKS]
    if len(anchors) != 1:
        return None
    i = anchors[0]
    return nodes[:i], nodes[i], nodes[i + 1 :]


def fused_reduce_supported(node: Node) -> bool:
    parts = _split(node.attrs["body"])
    if parts is None:
        return False
    prologue, reduction, epilogue = parts
    check = _CHECKS.get(reduction.op)
    if check is None or not check(reduction):
        return False
    if reduction.op == "LayerNormalization" and any(o is not None for o in reduction.outputs[1:]):
        return False
    return pointwise_supported(prologue) and pointwise_supported(epilogue)


def lower_fused_reduce(node: Node, ctx: LoweringContext) -> None:
    body = node.attrs["body"]
    parts = _split(body)
    if parts is None or not fused_reduce_supported(node):
        raise LoweringError(f"Fused reduce node {node.name!r} is not supported")
    prologue, reduction, epilogue = parts
    outer = dict(zip(body.inputs, node.inputs))
    slots: dict[Value, int] = {}

    def slot_of(v: Value, layouts) -> int:
        if v in slots:
            return slots[v]
        if v in outer:
            return ctx.input(outer[v], layouts=layouts)
        if v.constant is not None:
            return ctx.slot_of(v)
        raise LoweringError(f"Fused reduce {node.name!r}: {v.name!r} has no slot")

    if prologue:
        data = reduction.inputs[0]
        produced = {o for n in prologue for o in n.outputs if o is not None}
        if data not in produced:
            raise LoweringError(f"Fused reduce {node.name!r}: prologue does not feed the data")
        reads = {v for n in prologue for v in n.inputs if v is not None and v not in produced}
        bindings = {v: ctx.input(outer[v], layouts=_ANY) for v in reads if v in outer}
        temp = ctx.temp(_dtype(data), static_dims(data))
        emit_pointwise(ctx, prologue, bindings, data, temp, node.name + "/prologue")
        slots[data] = temp
    red_out = reduction.outputs[0]
    if epilogue:
        target = ctx.temp(_dtype(red_out), static_dims(red_out))
    else:
        target = ctx.output(node.outputs[0])
    if reduction.op == "LayerNormalization":
        _emit_layernorm(ctx, reduction, slot_of, [target])
    else:
        _EMITS[reduction.op](ctx, reduction, slot_of, target)
    if epilogue:
        produced = {o for n in epilogue for o in n.outputs if o is not None}
        reads = {v for n in epilogue for v in n.inputs if v is not None and v not in produced}
        bindings = {red_out: target}
        for v in reads:
            if v is red_out:
                continue
            if v in outer:
                bindings[v] = ctx.input(outer[v], layouts=_ANY)
            elif v in slots:
                bindings[v] = slots[v]
        out = ctx.output(node.outputs[0], layouts=_ANY)
        emit_pointwise(ctx, epilogue, bindings, body.outputs[0], out, node.name + "/epilogue")


LOWERINGS = {
    **{op: lower_reduce for op in _REDUCE_OPS},
    "ArgMax": lower_arg,
    "ArgMin": lower_arg,
    "Softmax": lower_softmax,
    "LogSoftmax": lower_softmax,
    "LayerNormalization": lower_layernorm,
}
