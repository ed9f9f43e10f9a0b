# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Selections whose output length the run decides: Unique (src/cpu/unique.cpp), Compress with
a run-time condition and NonZero (src/cpu/select.cpp).

These are *counted* kernels, the NonMaxSuppression mechanism (lower_nms.py) for outputs whose
data can be any value, so that no -1 can mark their end: each bounded output is written
into a slot of its bound (LoweringContext.bounded_output) along one axis, the step's
`cut_axes` names that axis per output (-1: an output of static dims, as Unique's
inverse_indices), and the step's last output is an i64[1] slot (LoweringContext.run_count:
a hidden segment output after the graph's, or an arena slot where no bounded output leaves
the plan) the kernel writes the length to; the cpu segment cuts the outputs to it and drops
the count (native/bounded.py, COUNTED_KERNELS). As with NMS, a bounded output only leaves the
plan (a graph output, or read by nodes that run on ref with fallback='ref'); a bounded
output no one reads goes to an arena slot.

A Compress whose condition is a constant has static dims: its output slot is exact, read by
the plan's nodes like any other, and the count goes to an arena slot (never cut)."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, Value
from .lower import LoweringContext, LoweringError, node_label, static_dims
from .lower_support import supports

NOT_CUT = -1  # a cut_axes entry: an output of static dims


def _slot(ctx: LoweringContext, value: Value | None, dtype: DType, dims, bounded: bool) -> int:
    """The slot a selection kernel writes output `value` to: a bounded segment output, an
    exact output (static dims), or an arena slot for an output no one reads."""
    if value is None or (bounded and value not in ctx.graph_outputs):
        return ctx.temp(dtype, dims)
    return ctx.bounded_output(value, dims) if bounded else ctx.output(value)


def _count_slot(ctx: LoweringContext, bounded: list) -> int:
    """The count's slot: a hidden segment output (run_count) where a bounded output leaves
    the plan to be cut, else an arena slot (no output of the segment to cut)."""
    if any(v is not None and v in ctx.graph_outputs for v in bounded):
        return ctx.run_count()
    return ctx.temp(DType.i64, (1,))


def _axis(node: Node, rank: int) -> int | None:
    axis = node.attrs.get("axis")
    return None if axis is None else int(axis) + (rank if int(axis) < 0 else 0)


def _check(reason):
    """A lowering's `supports` predicate from its `reason(node) -> str | None`."""
    return lambda node, ctx=None: reason(node) is None


def _refuse(node: Node, ctx: LoweringContext, reason) -> None:
    why = reason(node)
    if why:
        raise LoweringError(
            f"the {ctx.target} target cannot run {node.op} {node_label(node)!r}: {why}"
        )


# -- Unique -------------------------------------------------------------------------------
def unique_refusal(node: Node) -> str | None:
    """Why the Unique kernel cannot run `node` (None when it can)."""
    rank = len(node.inputs[0].type.dims)
    axis = _axis(node, rank)
    if axis is not None and not 0 <= axis < rank:
        return f"axis {node.attrs['axis']} out of range for rank {rank}"
    for v in node.outputs[1:]:
        if v is not None and v.type.dtype != DType.i64:
            return "indices, inverse_indices and counts must be int64"
    return None


@supports(_check(unique_refusal))
def lower_unique(node: Node, ctx: LoweringContext) -> None:
    _refuse(node, ctx, unique_refusal)
    x = node.inputs[0]
    dims = static_dims(x)
    axis = _axis(node, len(dims))
    n = int(np.prod(dims, dtype=np.int64)) if axis is None else dims[axis]
    y_bound = (n,) if axis is None else dims  # dims[axis] == n: the bound of slices
    outs = list(node.outputs) + [None] * (4 - len(node.outputs))
    y, first, inverse, counts = outs
    slots = [
        _slot(ctx, y, x.type.dtype, y_bound, bounded=True),
        _slot(ctx, first, DType.i64, (n,), bounded=True),
        _slot(ctx, inverse, DType.i64, (n,), bounded=False),
        _slot(ctx, counts, DType.i64, (n,), bounded=True),
        _count_slot(ctx, [y, first, counts]),
    ]
    attrs = {
        "axis": -1 if axis is None else axis,
        "sorted": int(node.attrs.get("sorted", 1)),
        "cut_axes": [0 if axis is None else axis, 0, NOT_CUT, 0],
    }
    ctx.emit("Unique", [ctx.input(x)], slots, attrs, node.name)


# -- Compress -----------------------------------------------------------------------------
def compress_refusal(node: Node) -> str | None:
    """Why the Compress kernel cannot run `node` (None when it can)."""
    data, condition = node.inputs[0].type, node.inputs[1].type
    if condition.dtype != DType.bool or len(condition.dims) != 1:
        return "the condition must be a 1-D bool tensor"
    axis = _axis(node, len(data.dims))
    if axis is not None and not 0 <= axis < len(data.dims):
        return f"axis {node.attrs['axis']} out of range for rank {len(data.dims)}"
    return None


@supports(_check(compress_refusal))
def lower_compress(node: Node, ctx: LoweringContext) -> None:
    _refuse(node, ctx, compress_refusal)
    data, condition = node.inputs
    dims = static_dims(data)
    axis = _axis(node, len(dims))
    length = int(np.prod(dims, dtype=np.int64)) if axis is None else dims[axis]
    bound = min(length, static_dims(condition)[0])
    out = node.outputs[0]
    if condition.constant is not None:  # static dims: an exact slot, the count unused
        slots = [_slot(ctx, out, data.type.dtype, static_dims(out), bounded=False)]
        slots.append(ctx.temp(DType.i64, (1,)))
    else:
        out_dims = (bound,) if axis is None else (*dims[:axis], bound, *dims[axis + 1 :])
        slots = [_slot(ctx, out, data.type.dtype, out_dims, bounded=True)]
        slots.append(_count_slot(ctx, [out]))
    attrs = {"axis": -1 if axis is None else axis, "cut_axes": [0 if axis is None else axis]}
    ctx.emit("Compress", [ctx.input(data), ctx.input(condition)], slots, attrs, node.name)


# -- NonZero ------------------------------------------------------------------------------
def nonzero_refusal(node: Node) -> str | None:
    """Why the NonZero kernel cannot run `node` (None when it can)."""
    if not node.inputs[0].type.dims:
        return "a scalar input (its output has no coordinate rows)"
    return None


@supports(_check(nonzero_refusal))
def lower_nonzero(node: Node, ctx: LoweringContext) -> None:
    _refuse(node, ctx, nonzero_refusal)
    x = node.inputs[0]
    dims = static_dims(x)
    bound = (len(dims), int(np.prod(dims, dtype=np.int64)))
    slots = [_slot(ctx, node.outputs[0], DType.i64, bound, bounded=True)]
    slots.append(_count_slot(ctx, node.outputs[:1]))
    ctx.emit("NonZero", [ctx.input(x)], slots, {"cut_axes": [1]}, node.name)


# their outputs' dims are decided by the run: lower_support.node_supported checks inputs only
for _lower in (lower_unique, lower_compress, lower_nonzero):
    _lower.bounded_outputs = True

LOWERINGS = {"Unique": lower_unique, "Compress": lower_compress, "NonZero": lower_nonzero}
