# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of indexing: Slice, Gather*, Scatter*, OneHot, NonZero, Compress, Trilu, Unique,
ReverseSequence, ...."""

import numpy as np

from ...errors import GraphError
from .. import infer
from ..dtypes import DType
from ..schema import define
from ..types import TensorType, fresh_dim


def _ints(array) -> list[int] | None:
    return None if array is None else [int(v) for v in array.reshape(-1)]


def slice_bounds(dim: int, start: int, end: int, step: int) -> tuple[int, int, int]:
    """ONNX Slice clamping of one axis of size `dim` -> (start, end, count)."""
    if step == 0:
        raise ValueError("Slice step must not be 0")
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        count = max(0, -(-(end - start) // step))
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        count = max(0, -(-(start - end) // -step))
    return start, end, count


def _slice(ctx):
    data = ctx.tensor(0)
    if data.dims is None:
        return [TensorType(data.dtype, None)]
    rank = len(data.dims)
    starts, ends = _ints(ctx.const(1)), _ints(ctx.const(2))
    axes = _ints(ctx.const(3)) if ctx.has(3) else None
    steps = _ints(ctx.const(4)) if ctx.has(4) else None
    known = (
        starts is not None
        and ends is not None
        and (axes is not None or not ctx.has(3))
        and (steps is not None or not ctx.has(4))
    )
    if not known or starts is None or ends is None:
        return [infer.unknown(data.dtype, rank)]
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    if 0 in steps:
        raise GraphError(f"{ctx.where}: a Slice step is 0")
    dims = list(data.dims)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = infer.normalize_axis(axis, rank, ctx.where)
        dim = dims[axis]
        if isinstance(dim, int):
            dims[axis] = slice_bounds(dim, start, end, step)[2]
        elif not (start == 0 and step == 1 and end >= 2**31 - 1):
            dims[axis] = fresh_dim()
    return [TensorType(data.dtype, tuple(dims))]


def _gather(ctx):
    data, indices = ctx.tensor(0), ctx.tensor(1)
    if data.dims is None or indices.dims is None:
        return [TensorType(data.dtype, None)]
    axis = infer.normalize_axis(ctx.attrs["axis"], len(data.dims), ctx.where)
    return [TensorType(data.dtype, data.dims[:axis] + indices.dims + data.dims[axis + 1 :])]


def _gather_elements(ctx):
    return [TensorType(ctx.tensor(0).dtype, ctx.tensor(1).dims)]


def _gather_nd(ctx):
    data, indices = ctx.tensor(0), ctx.tensor(1)
    if data.dims is None or indices.dims is None:
        return [TensorType(data.dtype, None)]
    if not indices.dims:
        raise GraphError(f"{ctx.where}: indices must have rank >= 1")
    if not isinstance(indices.dims[-1], int):
        return [TensorType(data.dtype, None)]
    b = ctx.attrs["batch_dims"]
    return [TensorType(data.dtype, indices.dims[:-1] + data.dims[b + indices.dims[-1] :])]


def _one_hot(ctx):
    indices, values = ctx.tensor(0), ctx.tensor(2)
    if indices.dims is None:
        return [TensorType(values.dtype, None)]
    rank = len(indices.dims) + 1
    axis = infer.normalize_axis(ctx.attrs["axis"], rank, ctx.where)
    depth = ctx.const(1)
    depth = int(depth.reshape(-1)[0]) if depth is not None else fresh_dim()
    dims = list(indices.dims)
    dims.insert(axis, depth)
    return [TensorType(values.dtype, tuple(dims))]


def _non_zero(ctx):
    data = ctx.tensor(0)
    rank = data.rank if data.rank is not None else fresh_dim()
    return [TensorType(DType.i64, (rank, fresh_dim()))]


def _compress(ctx):
    data = ctx.tensor(0)
    axis = ctx.attrs["axis"]
    condition = ctx.const(1)
    kept = fresh_dim() if condition is None else int(np.count_nonzero(condition))
    if axis is None:
        return [TensorType(data.dtype, (kept,))]
    if data.dims is None:
        return [TensorType(data.dtype, None)]
    axis = infer.normalize_axis(axis, len(data.dims), ctx.where)
    dims = list(data.dims)
    dims[axis] = kept
    return [TensorType(data.dtype, tuple(dims))]


def _unique(ctx):
    data = ctx.tensor(0)
    axis = ctx.attrs["axis"]
    count = fresh_dim("u")
    if axis is None:
        total = data.numel()
        y = TensorType(data.dtype, (count,))
        inverse = (total if total is not None else fresh_dim(),)
    elif data.dims is None:
        y, inverse = TensorType(data.dtype, None), (fresh_dim(),)
    else:
        if not data.dims:
            raise GraphError(f"{ctx.where}: Unique along an axis needs rank >= 1")
        axis = infer.normalize_axis(axis, len(data.dims), ctx.where)
        dims = list(data.dims)
        inverse = (dims[axis],)
        dims[axis] = count
        y = TensorType(data.dtype, tuple(dims))
    return [
        y,
        TensorType(DType.i64, (count,)),
        TensorType(DType.i64, inverse),
        TensorType(DType.i64, (count,)),
    ]


_REDUCTIONS = ("reduction", "str", "none")

define("Slice", ("data", "starts", "ends", "axes?", "steps?"), ("output",), (), _slice)
define("Gather", ("data", "indices"), ("output",), [("axis", "int", 0)], _gather)
define("GatherElements", ("data", "indices"), ("output",), [("axis", "int", 0)], _gather_elements)
define("GatherND", ("data", "indices"), ("output",), [("batch_dims", "int", 0)], _gather_nd)
# The importer turns the old Scatter (opset 9-10) into ScatterElements.
define(
    "ScatterElements",
    ("data", "indices", "updates"),
    ("output",),
    [("axis", "int", 0), _REDUCTIONS],
    infer.same_as(0),
)
define("ScatterND", ("data", "indices", "updates"), ("output",), [_REDUCTIONS], infer.same_as(0))
define("OneHot", ("indices", "depth", "values"), ("output",), [("axis", "int", -1)], _one_hot)
define("NonZero", ("X",), ("Y",), (), _non_zero)
define("Compress", ("input", "condition"), ("output",), [("axis", "int", None)], _compress)
define("Trilu", ("input", "k?"), ("output",), [("upper", "int", 1)], infer.same_as(0))
define(
    "Unique",
    ("X",),
    ("Y", "indices?", "inverse_indices?", "counts?"),
    [("axis", "int", None), ("sorted", "int", 1)],
    _unique,
)
define(
    "ReverseSequence",
    ("input", "sequence_lens"),
    ("Y",),
    [("batch_axis", "int", 1), ("time_axis", "int", 0)],
    infer.same_as(0),
)
define(
    "TensorScatter",
    ("past_cache", "update", "write_indices?"),
    ("present_cache",),
    [("mode", "str", "linear"), ("axis", "int", -2)],
    infer.same_as(0),
)
