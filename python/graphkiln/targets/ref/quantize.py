# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear."""

import ml_dtypes
import numpy as np

_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def expand_param(param, x_ndim: int, axis: int, block_size: int):
    """A scale or zero point shaped to broadcast against x: scalar (per tensor), 1-D along
    `axis` (per axis) or, with block_size > 0, each entry repeated block_size times along
    `axis` (blocked; the scale has x's rank)."""
    if param.ndim == 0 or x_ndim == 0:
        return param.reshape(()) if param.size == 1 else param
    axis = axis % x_ndim
    if block_size and block_size > 0:
        return np.repeat(param, block_size, axis=axis)
    if param.ndim == 1:
        shape = [1] * x_ndim
        shape[axis] = param.shape[0]
        return param.reshape(shape)
    return param


def _crop_blocks(param, x_shape, axis: int, block_size: int):
    """Repeated blocks may overrun x along the axis (ceil division): cut them to x's length."""
    if not block_size or param.ndim == 0 or not x_shape:
        return param
    axis = axis % len(x_shape)
    return np.take(param, np.arange(x_shape[axis]), axis=axis)


def int_range(dtype):
    """(min, max) of an integer dtype, the 4- and 2-bit ones of ml_dtypes included."""
    info = ml_dtypes.iinfo(dtype)
    return int(info.min), int(info.max)


def is_integer(dtype) -> bool:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return True
    return dtype in (
        np.dtype(ml_dtypes.int4),
        np.dtype(ml_dtypes.uint4),
        np.dtype(ml_dtypes.int2),
        np.dtype(ml_dtypes.uint2),
    )


def to_quantized(values, zero_point, dtype, saturate: bool = True):
    """saturate(values + zero_point) in `dtype`, values already divided by the scale.
    Integers round half to even and clip to the type's range; the small float types
    (float8, float4) round to nearest even in the cast and, with `saturate`, clip to their
    largest finite value instead of becoming inf / NaN."""
    dtype = np.dtype(dtype)
    if is_integer(dtype):
        low, high = int_range(dtype)
        result = np.rint(values.astype(np.float64))
        if zero_point is not None:
            result = result + zero_point.astype(np.float64)
        return np.clip(result, low, high).astype(dtype)
    result = values.astype(np.float32)
    if zero_point is not None:
        result = result + zero_point.astype(np.float32)
    always_saturates = dtype == np.dtype(ml_dtypes.float4_e2m1fn)
    if saturate or always_saturates:
        largest = np.float32(ml_dtypes.finfo(dtype).max)
        result = np.where(np.isnan(result), result, np.clip(result, -largest, largest))
    return result.astype(dtype)


def _division_dtype(x, scale, precision):
    """float32 for half-precision and integer scales: rounding the float32 quotient to the
    half type equals dividing in that type, and int32 scales are ints in any case."""
    if precision is not None:
        wanted = precision.numpy
        return wanted, (np.float32 if wanted in _HALF else wanted)
    if scale.dtype == np.float64 or x.dtype == np.float64:
        return np.dtype(np.float64), np.float64
    if scale.dtype in _HALF:
        return scale.dtype, np.float32
    return np.dtype(np.float32), np.float32


def QuantizeLinear(
    x, y_scale, y_zero_point=None, *, axis, saturate, block_size, output_dtype, precision
):
    if y_zero_point is not None:
        target = y_zero_point.dtype
    else:
        target = output_dtype.numpy if output_dtype is not None else np.dtype(np.uint8)
    scale = _crop_blocks(expand_param(y_scale, x.ndim, axis, block_size), x.shape, axis, block_size)
    zero = None
    if y_zero_point is not None:
        zero = _crop_blocks(
            expand_param(y_zero_point, x.ndim, axis, block_size), x.shape, axis, block_size
        )
    rounded_to, compute = _division_dtype(x, y_scale, precision)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        quotient = (x.astype(compute) / scale.astype(compute)).astype(rounded_to)
        return to_quantized(quotient, zero, target, bool(saturate))


def DequantizeLinear(x, x_scale, x_zero_point=None, *, axis, block_size, output_dtype):
    scale = _crop_blocks(expand_param(x_scale, x.ndim, axis, block_size), x.shape, axis, block_size)
    # float64 holds (x - zero) * scale exactly for 8/16-bit x, so the final cast rounds once
    values = x.astype(np.float64)
    if x_zero_point is not None:
        zero = _crop_blocks(
            expand_param(x_zero_point, x.ndim, axis, block_size), x.shape, axis, block_size
        )
        values = values - zero.astype(np.float64)
    result = values * scale.astype(np.float64)
    if output_dtype is not None:
        return result.astype(output_dtype.numpy)
    return result.astype(
        x_scale.dtype if x_scale.dtype.kind == "f" or x_scale.dtype in _HALF else np.float32
    )


def DynamicQuantizeLinear(x):
    # uint8 with the range widened to include 0, so that 0 is exactly representable
    low = min(0.0, float(np.min(x, initial=0.0)))
    high = max(0.0, float(np.max(x, initial=0.0)))
    scale = np.float32((np.float32(high) - np.float32(low)) / np.float32(255))
    if scale == 0:
        zero = np.uint8(0)
        return np.zeros(x.shape, np.uint8), scale, zero
    zero = np.uint8(np.clip(np.rint(np.float32(0) - np.float32(low) / scale), 0, 255))
    quotient = x.astype(np.float32) / scale
    y = np.clip(np.rint(quotient) + np.float32(zero), 0, 255).astype(np.uint8)
    return y, scale, zero


KERNELS = {
    "QuantizeLinear": QuantizeLinear,
    "DequantizeLinear": DequantizeLinear,
    "DynamicQuantizeLinear": DynamicQuantizeLinear,
}
