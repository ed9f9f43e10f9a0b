# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of unary and binary math, comparisons, logic, bitwise, variadic (Sum/Max/...),
Where, Clip."""

import functools
import math

import numpy as np


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype float math runs in: float64 stays, every narrower float (float16, bfloat16,
    float8) is widened to float32 so results are rounded once, on the way back."""
    dtype = np.dtype(dtype)
    return dtype if dtype == np.float64 else np.dtype(np.float32)


def float_math(fn):
    """Wrap `fn(x)` (float math) so it runs in compute_dtype and returns x's dtype."""

    @functools.wraps(fn)
    def kernel(x):
        with np.errstate(all="ignore"):
            return fn(x.astype(compute_dtype(x.dtype))).astype(x.dtype)

    return kernel


def _is_int(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def _is_float(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (dtype.kind == "V" and dtype.names is None and not _is_int(dtype))


_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function in double precision (numpy has none; math.erf is exact enough)."""
    return np.asarray(_erf_scalar(x.astype(np.float64)), dtype=np.float64)


# -- unary -----------------------------------------------------------------------------------


def Abs(x):
    return np.abs(x) if _is_int(x.dtype) or x.dtype.kind == "f" else float_math(np.abs)(x)


def Neg(x):
    return np.negative(x) if _is_int(x.dtype) or x.dtype.kind == "f" else float_math(np.negative)(x)


def Sign(x):
    return np.sign(x) if _is_int(x.dtype) else float_math(np.sign)(x)


def Reciprocal(x):
    return float_math(lambda v: 1 / v)(x)


Exp = float_math(np.exp)
Log = float_math(np.log)
Sqrt = float_math(np.sqrt)
Floor = float_math(np.floor)
Ceil = float_math(np.ceil)
Round = float_math(np.round)  # halves to even, as ONNX asks
Sin = float_math(np.sin)
Cos = float_math(np.cos)
Tan = float_math(np.tan)
Asin = float_math(np.arcsin)
Acos = float_math(np.arccos)
Atan = float_math(np.arctan)
Sinh = float_math(np.sinh)
Cosh = float_math(np.cosh)
Asinh = float_math(np.arcsinh)
Acosh = float_math(np.arccosh)
Atanh = float_math(np.arctanh)
Erf = float_math(erf)


def IsNaN(x):
    return np.isnan(x.astype(compute_dtype(x.dtype)))


def IsInf(x, *, detect_negative=1, detect_positive=1):
    x = x.astype(compute_dtype(x.dtype))
    return np.isinf(x) & (((x > 0) & bool(detect_positive)) | ((x < 0) & bool(detect_negative)))


def Not(x):
    return np.logical_not(x)


def BitwiseNot(x):
    return np.invert(x)


# -- binary ----------------------------------------------------------------------------------


def _arith(fn):
    """A binary kernel: integers and native floats computed as they are, other floats widened."""

    @functools.wraps(fn)
    def kernel(a, b):
        with np.errstate(all="ignore"):
            if _is_int(a.dtype) or a.dtype == np.float32 or a.dtype == np.float64:
                return fn(a, b)
            wide = compute_dtype(a.dtype)
            return fn(a.astype(wide), b.astype(wide)).astype(a.dtype)

    return kernel


@_arith
def Add(a, b):
    return np.add(a, b)


@_arith
def Sub(a, b):
    return np.subtract(a, b)


@_arith
def Mul(a, b):
    return np.multiply(a, b)


@_arith
def Div(a, b):
    if not _is_int(a.dtype):
        return np.divide(a, b)
    # integers divide truncating toward zero (numpy's // floors); x / 0 is left as numpy gives it
    quotient = np.floor_divide(a, b)
    remainder = np.remainder(a, b)
    fix = (remainder != 0) & ((a < 0) != (b < 0))
    return quotient + fix.astype(quotient.dtype)


def Pow(x, y):
    with np.errstate(all="ignore"):
        if _is_int(x.dtype) and _is_int(y.dtype) and not np.any(y < 0):
            return np.power(x.astype(np.int64), y.astype(np.int64)).astype(x.dtype)
        if _is_int(x.dtype):
            # a float or negative exponent on integers: the float result, truncated back
            return np.trunc(np.power(x.astype(np.float64), y.astype(np.float64)))
        wide = compute_dtype(x.dtype)
        if y.dtype == np.float64 and wide != np.float64:
            wide = np.dtype(np.float64)
        return np.power(x.astype(wide), y.astype(wide)).astype(x.dtype)


@_arith
def _floor_mod(a, b):
    return np.mod(a, b)


@_arith
def _trunc_mod(a, b):
    return np.fmod(a, b)


def Mod(a, b, *, fmod=0):
    # fmod=0: remainder takes the sign of b (floor division); fmod=1: the sign of a (C fmod)
    return _trunc_mod(a, b) if fmod else _floor_mod(a, b)


def BitShift(x, y, *, direction="LEFT"):
    bits = x.dtype.itemsize * 8
    y = y.astype(np.int64)
    out_of_range = (y < 0) | (y >= bits)
    amount = np.where(out_of_range, 0, y).astype(x.dtype)
    if direction == "RIGHT":
        shifted = np.right_shift(x, amount)
        # a shift by >= the width leaves only the sign fill: -1 for negative signed x, else 0
        fill = np.where(x < 0, -1, 0).astype(x.dtype) if x.dtype.kind == "i" else np.zeros_like(x)
    elif direction == "LEFT":
        shifted = np.left_shift(x, amount)
        fill = np.zeros_like(x)
    else:
        raise ValueError(f"BitShift direction must be LEFT or RIGHT, got {direction!r}")
    return np.where(out_of_range, fill, shifted).astype(x.dtype)


def BitwiseAnd(a, b):
    return np.bitwise_and(a, b)


def BitwiseOr(a, b):
    return np.bitwise_or(a, b)


def BitwiseXor(a, b):
    return np.bitwise_xor(a, b)


def And(a, b):
    return np.logical_and(a, b)


def Or(a, b):
    return np.logical_or(a, b)


def Xor(a, b):
    return np.logical_xor(a, b)


def _compare(fn):
    @functools.wraps(fn)
    def kernel(a, b):
        if _is_float(a.dtype) and a.dtype.kind != "f":
            a, b = a.astype(np.float32), b.astype(np.float32)
        return np.asarray(fn(a, b), dtype=bool)

    return kernel


Equal = _compare(np.equal)
Less = _compare(np.less)
LessOrEqual = _compare(np.less_equal)
Greater = _compare(np.greater)
GreaterOrEqual = _compare(np.greater_equal)


# -- variadic --------------------------------------------------------------------------------


def Sum(*data):
    return functools.reduce(Add, data)


def Mean(*data):
    wide = compute_dtype(data[0].dtype)
    total = functools.reduce(np.add, (d.astype(wide) for d in data))
    return (total / len(data)).astype(data[0].dtype)


def Max(*data):
    return functools.reduce(_compare_pick(np.maximum), data)


def Min(*data):
    return functools.reduce(_compare_pick(np.minimum), data)


def _compare_pick(fn):
    def pick(a, b):
        if _is_int(a.dtype) or a.dtype.kind == "f":
            return fn(a, b)
        return fn(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)

    return pick


def Where(condition, x, y):
    return np.where(condition.astype(bool), x, y)


def Clip(x, min=None, max=None):  # noqa: A002 - the ONNX input names
    # min first, then max: when min > max every value becomes max, as ONNX specifies
    if min is not None:
        x = _compare_pick(np.maximum)(x, min.astype(x.dtype))
    if max is not None:
        x = _compare_pick(np.minimum)(x, max.astype(x.dtype))
    return x


_NAMES = (
    "Abs",
    "Neg",
    "Exp",
    "Log",
    "Sqrt",
    "Reciprocal",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "Erf",
    "IsNaN",
    "IsInf",
    "Not",
    "BitwiseNot",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Mod",
    "BitShift",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "And",
    "Or",
    "Xor",
    "Equal",
    "Less",
    "LessOrEqual",
    "Greater",
    "GreaterOrEqual",
    "Sum",
    "Mean",
    "Max",
    "Min",
    "Where",
    "Clip",
)

KERNELS = {name: globals()[name] for name in _NAMES}
