# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of reductions: Reduce*, ArgMax, ArgMin, CumSum, CumProd, TopK."""

from ..schema import define
from .. import infer
from ..dtypes import DType
from ..types import TensorType, fresh_dim

REDUCE_OPS = (
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
)


def reduced_dims(dims, axes, keepdims: bool, where: str = ""):
    """dims with `axes` (already known ints, may be negative) reduced away or kept as 1."""
    rank = len(dims)
    chosen = {infer.normalize_axis(int(a), rank, where) for a in axes}
    if keepdims:
        return tuple(1 if i in chosen else d for i, d in enumerate(dims))
    return tuple(d for i, d in enumerate(dims) if i not in chosen)


def _reduce(ctx):
    data = ctx.tensor(0)
    keepdims = bool(ctx.attrs["keepdims"])
    if ctx.has(1):
        axes = ctx.const(1)
        if axes is None:  # axes computed at run time: only a kept rank is known
            return [infer.unknown(data.dtype, data.rank if keepdims else None)]
        axes = [int(a) for a in axes.reshape(-1)]
    else:
        axes = []
    if data.dims is None:
        return [TensorType(data.dtype, None)]
    if not axes:
        if ctx.attrs["noop_with_empty_axes"]:
            return [data]
        axes = range(len(data.dims))
    return [TensorType(data.dtype, reduced_dims(data.dims, axes, keepdims, ctx.where))]


# The IR form is the newest ONNX one: `axes` is an optional int64 input (the importer turns
# the older `axes` attribute into a constant input).
# sums and products over many elements: float32 under the gpu's fp16 / bf16
_HALF_FP32 = (
    "ReduceSum",
    "ReduceSumSquare",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceProd",
)
for _op in REDUCE_OPS:
    define(
        _op,
        ("data", "axes?"),
        ("reduced",),
        [("keepdims", "int", 1), ("noop_with_empty_axes", "int", 0)],
        _reduce,
        traits=("reduction",) + (("half_fp32",) if _op in _HALF_FP32 else ()),
    )


def _arg_reduce(ctx):
    data = ctx.tensor(0)
    if data.dims is None:
        return [TensorType(DType.i64, None)]
    dims = reduced_dims(data.dims, [ctx.attrs["axis"]], bool(ctx.attrs["keepdims"]), ctx.where)
    return [TensorType(DType.i64, dims)]


for _op in ("ArgMax", "ArgMin"):
    define(
        _op,
        ("data",),
        ("reduced",),
        [("axis", "int", 0), ("keepdims", "int", 1), ("select_last_index", "int", 0)],
        _arg_reduce,
    )

for _op in ("CumSum", "CumProd"):
    define(
        _op,
        ("x", "axis"),
        ("y",),
        [("exclusive", "int", 0), ("reverse", "int", 0)],
        infer.same_as(0),
        traits=("half_fp32",),
    )


def _topk(ctx):
    x = ctx.tensor(0)
    if x.dims is None:
        return [TensorType(x.dtype, None), TensorType(DType.i64, None)]
    axis = infer.normalize_axis(ctx.attrs["axis"], len(x.dims), ctx.where)
    k = ctx.const(1)
    k_dim = int(k.reshape(-1)[0]) if k is not None and k.size == 1 else fresh_dim("k")
    dims = x.dims[:axis] + (k_dim,) + x.dims[axis + 1 :]
    return [TensorType(x.dtype, dims), TensorType(DType.i64, dims)]


# K is a 1-element int64 input (the importer turns the opset<10 `k` attribute into one).
define(
    "TopK",
    ("X", "K"),
    ("Values", "Indices"),
    [("axis", "int", -1), ("largest", "int", 1), ("sorted", "int", 1)],
    _topk,
)
