# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of tensors from nothing or from shapes: Constant, ConstantOfShape, Range, EyeLike, random
ops."""

import math

import numpy as np

from ...errors import GraphError
from .. import infer
from ..dtypes import DType
from ..schema import REQUIRED, define
from ..types import TensorType, fresh_dim


def _constant(ctx):
    value = ctx.attrs["value"]
    return [TensorType(DType.from_numpy(value.dtype), value.shape)]


def _constant_of_shape(ctx):
    value = ctx.attrs["value"]
    dtype = DType.f32 if value is None else DType.from_numpy(value.dtype)
    shape = ctx.const(0)
    if shape is not None:
        return [TensorType(dtype, tuple(int(d) for d in shape.reshape(-1)))]
    dims = ctx.tensor(0).dims
    return [infer.unknown(dtype, dims[0] if dims and isinstance(dims[0], int) else None)]


def range_count(start, limit, delta) -> int:
    """max(ceil((limit - start) / delta), 0), exactly for integers."""
    if (
        not np.all(np.isfinite(np.array([start, limit, delta], dtype=np.float64)))
        or float(delta) == 0
    ):
        raise GraphError(
            f"Range needs finite start, limit and a non-zero delta, got {start}, {limit}, {delta}"
        )
    if all(np.issubdtype(np.asarray(v).dtype, np.integer) for v in (start, limit, delta)):
        span, step = int(limit) - int(start), int(delta)
        return max(-(-span // step), 0)
    return max(int(math.ceil((float(limit) - float(start)) / float(delta))), 0)


def _range(ctx):
    dtype = ctx.tensor(0).dtype
    bounds = [ctx.const(i) for i in range(3)]
    if any(b is None for b in bounds):
        return [infer.unknown(dtype, 1)]
    start, limit, delta = (b.reshape(-1)[0] for b in bounds)
    return [TensorType(dtype, (range_count(start, limit, delta),))]


def _eye_like(ctx):
    data = ctx.tensor(0)
    return [TensorType(ctx.attrs["dtype"] or data.dtype, data.dims)]


def _random(ctx):
    return [TensorType(ctx.attrs["dtype"], tuple(ctx.attrs["shape"]))]


def _random_like(ctx):
    data = ctx.tensor(0)
    return [TensorType(ctx.attrs["dtype"] or data.dtype, data.dims)]


def _multinomial(ctx):
    dims = ctx.tensor(0).dims
    if dims is not None and len(dims) != 2:
        raise GraphError(f"{ctx.where}: input must be [batch_size, class_size]")
    batch = dims[0] if dims is not None else fresh_dim()
    return [TensorType(ctx.attrs["dtype"], (batch, ctx.attrs["sample_size"]))]


_SEED = ("seed", "float", None)

# Constant always holds its data in `value` (the importer turns value_float(s)/int(s)/
# string(s)/sparse_value into an array).
define("Constant", (), ("output",), [("value", "tensor", REQUIRED)], _constant)
# value: a one-element tensor; absent means float32 zero
define("ConstantOfShape", ("input",), ("output",), [("value", "tensor", None)], _constant_of_shape)
define("Range", ("start", "limit", "delta"), ("output",), [("stash_type", "int", 1)], _range)
define("EyeLike", ("input",), ("output",), [("dtype", "dtype", None), ("k", "int", 0)], _eye_like)
# Random ops draw from numpy's generator seeded with `seed` (unseeded when absent).
define(
    "RandomUniform",
    (),
    ("output",),
    [
        ("shape", "ints", REQUIRED),
        ("dtype", "dtype", DType.f32),
        ("low", "float", 0.0),
        ("high", "float", 1.0),
        _SEED,
    ],
    _random,
)
define(
    "RandomNormal",
    (),
    ("output",),
    [
        ("shape", "ints", REQUIRED),
        ("dtype", "dtype", DType.f32),
        ("mean", "float", 0.0),
        ("scale", "float", 1.0),
        _SEED,
    ],
    _random,
)
define(
    "RandomUniformLike",
    ("input",),
    ("output",),
    [("dtype", "dtype", None), ("low", "float", 0.0), ("high", "float", 1.0), _SEED],
    _random_like,
)
define(
    "RandomNormalLike",
    ("input",),
    ("output",),
    [("dtype", "dtype", None), ("mean", "float", 0.0), ("scale", "float", 1.0), _SEED],
    _random_like,
)
define("Bernoulli", ("input",), ("output",), [("dtype", "dtype", None), _SEED], _random_like)
define(
    "Multinomial",
    ("input",),
    ("output",),
    [("dtype", "dtype", DType.i32), ("sample_size", "int", 1), _SEED],
    _multinomial,
)
