# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of element type conversions: Cast, CastLike, BitCast."""

from ...errors import GraphError
from ..dtypes import DType
from ..schema import REQUIRED, define
from ..types import TensorType

# `saturate` matters for float8 targets, `round_mode` ("up", "down", "nearest") for float8e8m0.
_CAST_ATTRS = [("saturate", "int", 1), ("round_mode", "str", "up")]


def _cast(ctx):
    return [TensorType(ctx.attrs["to"], ctx.tensor(0).dims)]


def _cast_like(ctx):
    return [TensorType(ctx.tensor(1).dtype, ctx.tensor(0).dims)]


def _bitcast(ctx):
    source, target = ctx.tensor(0).dtype, ctx.attrs["to"]
    if _bits(source) != _bits(target):
        raise GraphError(
            f"{ctx.where}: BitCast from {source.value} to {target.value} changes the bit width"
        )
    return [TensorType(target, ctx.tensor(0).dims)]


def _bits(dtype) -> int:
    if dtype is DType.str:
        raise GraphError("BitCast does not take strings")
    return _SUB_BYTE_BITS.get(dtype, dtype.itemsize * 8)


# numpy keeps these in one byte each; their real width is smaller
_SUB_BYTE_BITS = {DType.u4: 4, DType.i4: 4, DType.f4e2m1: 4, DType.u2: 2, DType.i2: 2}


define(
    "Cast",
    ("input",),
    ("output",),
    [("to", "dtype", REQUIRED)] + _CAST_ATTRS,
    _cast,
    traits=("pointwise",),
)
define(
    "CastLike",
    ("input", "target_type"),
    ("output",),
    _CAST_ATTRS,
    _cast_like,
    traits=("half_fp32",),
)
define("BitCast", ("input",), ("output",), [("to", "dtype", REQUIRED)], _bitcast)
