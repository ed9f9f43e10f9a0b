# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear."""

from ..schema import define
from ..dtypes import DType
from ..types import TensorType


def _quantize(ctx):
    # the zero point's type decides; else output_dtype; else uint8 (ONNX's default)
    x = ctx.tensor(0)
    if ctx.has(2):
        dtype = ctx.tensor(2).dtype
    else:
        dtype = ctx.attrs["output_dtype"] or DType.u8
    return [TensorType(dtype, x.dims)]


# output_dtype / precision: None when absent (the importer maps ONNX's 0 = unset to None).
define(
    "QuantizeLinear",
    ("x", "y_scale", "y_zero_point?"),
    ("y",),
    [
        ("axis", "int", 1),
        ("saturate", "int", 1),
        ("block_size", "int", 0),
        ("output_dtype", "dtype", None),
        ("precision", "dtype", None),
    ],
    _quantize,
)


def _dequantize(ctx):
    dtype = ctx.attrs["output_dtype"] or ctx.tensor(1).dtype
    if not dtype.is_float or dtype is DType.f8e8m0:
        dtype = DType.f32  # a float8e8m0 scale is an exponent only; ONNX then needs output_dtype
    return [TensorType(dtype, ctx.tensor(0).dims)]


define(
    "DequantizeLinear",
    ("x", "x_scale", "x_zero_point?"),
    ("y",),
    [("axis", "int", 1), ("block_size", "int", 0), ("output_dtype", "dtype", None)],
    _dequantize,
)


def _dynamic_quantize(ctx):
    x = ctx.tensor(0)
    return [TensorType(DType.u8, x.dims), TensorType(DType.f32, ()), TensorType(DType.u8, ())]


define("DynamicQuantizeLinear", ("x",), ("y", "y_scale", "y_zero_point"), (), _dynamic_quantize)
