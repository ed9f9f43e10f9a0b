# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of control flow with subgraphs: If, Loop, Scan."""

from __future__ import annotations

from ...errors import GraphError
from ..schema import REQUIRED, define
from .. import infer
from ..types import OptionalType, SequenceType, TensorType, fresh_dim


def merge_types(first, second):
    """A type that values of both `first` and `second` fit: `first`'s dtype, equal dims kept,
    differing dims fresh. Either may be None (unknown); kinds that differ keep `first`."""
    if first is None or second is None:
        return first if second is None else second
    if isinstance(first, TensorType) and isinstance(second, TensorType):
        if first.dims is None or second.dims is None or len(first.dims) != len(second.dims):
            return TensorType(first.dtype, None)
        return TensorType(
            first.dtype,
            tuple(a if a == b else fresh_dim() for a, b in zip(first.dims, second.dims)),
        )
    if isinstance(first, (SequenceType, OptionalType)) and type(first) is type(second):
        return type(first)(merge_types(first.elem, second.elem))
    return first


def forget_symbols(t):
    """`t` with its symbolic dims replaced by fresh ones: a subgraph's symbols (from its
    inputs) mean nothing outside it, and may differ from one iteration to the next."""
    if isinstance(t, TensorType):
        if t.dims is None:
            return t
        return TensorType(t.dtype, tuple(fresh_dim() if isinstance(d, str) else d for d in t.dims))
    if isinstance(t, (SequenceType, OptionalType)):
        return type(t)(forget_symbols(t.elem))
    return t


def stacked(t, axis: int, length):
    """The type of per-iteration values of type `t` stacked along a new `axis`."""
    if not isinstance(t, TensorType):
        return None
    if t.dims is None:
        return TensorType(t.dtype, None)
    rank = len(t.dims) + 1
    axis = infer.normalize_axis(axis, rank, "scan output axis")
    dims = list(forget_symbols(t).dims)
    dims.insert(axis, fresh_dim("n") if length is None else length)
    return TensorType(t.dtype, tuple(dims))


def _if(ctx):
    then_outs = ctx.attrs["then_branch"].outputs
    else_outs = ctx.attrs["else_branch"].outputs
    if len(then_outs) != len(else_outs):
        raise GraphError(
            f"{ctx.where}: the branches have {len(then_outs)} and {len(else_outs)} outputs"
        )
    return [merge_types(a.type, b.type) for a, b in zip(then_outs, else_outs)]


def _loop(ctx):
    body = ctx.attrs["body"]
    carried = len(body.inputs) - 2
    outs = body.outputs
    if carried < 0 or max(ctx.num_inputs - 2, 0) != carried or len(outs) < carried + 1:
        raise GraphError(
            f"{ctx.where}: the body takes {len(body.inputs)} inputs and gives "
            f"{len(outs)} outputs for {carried} loop-carried values"
        )
    # a carried value is the initial one when the loop runs zero times, else the body's
    finals = [
        forget_symbols(merge_types(outs[1 + i].type, ctx.type(2 + i))) for i in range(carried)
    ]
    scans = [stacked(v.type, 0, None) for v in outs[1 + carried :]]
    return finals + scans


def _scan(ctx):
    body = ctx.attrs["body"]
    num_scan = ctx.attrs["num_scan_inputs"]
    states = ctx.num_inputs - num_scan
    outs = body.outputs
    if states < 0 or len(body.inputs) != ctx.num_inputs or len(outs) < states:
        raise GraphError(
            f"{ctx.where}: {ctx.num_inputs} inputs with {num_scan} scanned do not "
            f"fit a body of {len(body.inputs)} inputs and {len(outs)} outputs"
        )
    length = None
    if num_scan:
        first = ctx.tensor(states)
        axes = ctx.attrs["scan_input_axes"] or (0,) * num_scan
        if first.dims is not None:
            length = first.dims[infer.normalize_axis(axes[0], len(first.dims), ctx.where)]
    out_axes = ctx.attrs["scan_output_axes"] or (0,) * (len(outs) - states)
    finals = [forget_symbols(merge_types(outs[i].type, ctx.type(i))) for i in range(states)]
    scans = [stacked(v.type, axis, length) for v, axis in zip(outs[states:], out_axes)]
    return finals + scans


define(
    "If",
    ("cond",),
    ("outputs*",),
    [("then_branch", "graph", REQUIRED), ("else_branch", "graph", REQUIRED)],
    _if,
)

# body: (iteration_num, condition, carried...) -> (condition, carried..., scan outputs...)
define(
    "Loop",
    ("M?", "cond?", "v_initial*"),
    ("v_final_and_scan_outputs*",),
    [("body", "graph", REQUIRED)],
    _loop,
)

# The opset-9+ form; the importer rewrites opset 8's batched form into it.
define(
    "Scan",
    ("initial_state_and_scan_inputs*",),
    ("final_state_and_scan_outputs*",),
    [
        ("body", "graph", REQUIRED),
        ("num_scan_inputs", "int", REQUIRED),
        ("scan_input_axes", "ints", None),
        ("scan_input_directions", "ints", None),
        ("scan_output_axes", "ints", None),
        ("scan_output_directions", "ints", None),
    ],
    _scan,
)
