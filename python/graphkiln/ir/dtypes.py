# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Element types of the IR: short names, ONNX codes and numpy dtypes."""

from __future__ import annotations

import builtins
import enum

import ml_dtypes
import numpy as np


class DType(enum.Enum):
    """An element type. `.value` is the short name used by the printer (f32, i64, ...)."""

    f32 = "f32"
    f64 = "f64"
    f16 = "f16"
    bf16 = "bf16"
    i8 = "i8"
    i16 = "i16"
    i32 = "i32"
    i64 = "i64"
    u8 = "u8"
    u16 = "u16"
    u32 = "u32"
    u64 = "u64"
    bool = "bool"
    str = "str"
    c64 = "c64"
    c128 = "c128"
    f8e4m3fn = "f8e4m3fn"
    f8e4m3fnuz = "f8e4m3fnuz"
    f8e5m2 = "f8e5m2"
    f8e5m2fnuz = "f8e5m2fnuz"
    f8e8m0 = "f8e8m0"
    u4 = "u4"
    i4 = "i4"
    f4e2m1 = "f4e2m1"
    u2 = "u2"
    i2 = "i2"

    @property
    def numpy(self) -> np.dtype:
        return _NUMPY[self]

    @property
    def onnx(self) -> int:
        return _ONNX[self]

    @property
    def is_float(self) -> builtins.bool:  # builtins.: `bool` here is DType.bool
        return self in _FLOATS

    @property
    def is_int(self) -> builtins.bool:
        return self in _INTS

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @staticmethod
    def from_numpy(dtype) -> DType:
        dtype = np.dtype(dtype)
        if dtype.kind in "OUS":
            return DType.str
        try:
            return _FROM_NUMPY[dtype]
        except KeyError:
            raise ValueError(f"numpy dtype {dtype} has no graphkiln element type") from None

    @staticmethod
    def from_onnx(code: int) -> DType:
        try:
            return _FROM_ONNX[code]
        except KeyError:
            raise ValueError(f"ONNX element type {code} is not supported by graphkiln") from None

    @staticmethod
    def parse(name: builtins.str) -> DType:
        try:
            return DType(name)
        except ValueError:
            known = ", ".join(d.value for d in DType)
            raise ValueError(f"unknown element type {name!r}; known: {known}") from None

    def __repr__(self) -> builtins.str:
        return self.value


_NUMPY = {
    DType.f32: np.dtype(np.float32),
    DType.f64: np.dtype(np.float64),
    DType.f16: np.dtype(np.float16),
    DType.bf16: np.dtype(ml_dtypes.bfloat16),
    DType.i8: np.dtype(np.int8),
    DType.i16: np.dtype(np.int16),
    DType.i32: np.dtype(np.int32),
    DType.i64: np.dtype(np.int64),
    DType.u8: np.dtype(np.uint8),
    DType.u16: np.dtype(np.uint16),
    DType.u32: np.dtype(np.uint32),
    DType.u64: np.dtype(np.uint64),
    DType.bool: np.dtype(np.bool_),
    DType.str: np.dtype(object),
    DType.c64: np.dtype(np.complex64),
    DType.c128: np.dtype(np.complex128),
    DType.f8e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
    DType.f8e4m3fnuz: np.dtype(ml_dtypes.float8_e4m3fnuz),
    DType.f8e5m2: np.dtype(ml_dtypes.float8_e5m2),
    DType.f8e5m2fnuz: np.dtype(ml_dtypes.float8_e5m2fnuz),
    DType.f8e8m0: np.dtype(ml_dtypes.float8_e8m0fnu),
    DType.u4: np.dtype(ml_dtypes.uint4),
    DType.i4: np.dtype(ml_dtypes.int4),
    DType.f4e2m1: np.dtype(ml_dtypes.float4_e2m1fn),
    DType.u2: np.dtype(ml_dtypes.uint2),
    DType.i2: np.dtype(ml_dtypes.int2),
}

# TensorProto.DataType codes (onnx.proto); written out so the IR does not import onnx.
_ONNX = {
    DType.f32: 1,
    DType.u8: 2,
    DType.i8: 3,
    DType.u16: 4,
    DType.i16: 5,
    DType.i32: 6,
    DType.i64: 7,
    DType.str: 8,
    DType.bool: 9,
    DType.f16: 10,
    DType.f64: 11,
    DType.u32: 12,
    DType.u64: 13,
    DType.c64: 14,
    DType.c128: 15,
    DType.bf16: 16,
    DType.f8e4m3fn: 17,
    DType.f8e4m3fnuz: 18,
    DType.f8e5m2: 19,
    DType.f8e5m2fnuz: 20,
    DType.u4: 21,
    DType.i4: 22,
    DType.f4e2m1: 23,
    DType.f8e8m0: 24,
    DType.u2: 25,
    DType.i2: 26,
}

_FROM_ONNX = {code: dtype for dtype, code in _ONNX.items()}
_FROM_NUMPY = {np_dtype: dtype for dtype, np_dtype in _NUMPY.items() if dtype is not DType.str}
_FLOATS = {
    DType.f32,
    DType.f64,
    DType.f16,
    DType.bf16,
    DType.f8e4m3fn,
    DType.f8e4m3fnuz,
    DType.f8e5m2,
    DType.f8e5m2fnuz,
    DType.f8e8m0,
    DType.f4e2m1,
}
_INTS = {
    DType.i8,
    DType.i16,
    DType.i32,
    DType.i64,
    DType.u8,
    DType.u16,
    DType.u32,
    DType.u64,
    DType.u4,
    DType.i4,
    DType.u2,
    DType.i2,
}
