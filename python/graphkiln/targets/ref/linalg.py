# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of matrix products: MatMul, Gemm, Einsum, Det, MatMulInteger, QLinearMatMul."""

import ml_dtypes
import numpy as np

from .matmul_nbits import MatMulNBits
from .quantize import to_quantized

_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _wide(x):
    """Half-precision operands are multiplied in float32: numpy has no BLAS for them (slow)
    and would round every partial sum; the evaluator casts the result back."""
    return x.astype(np.float32) if x.dtype in _HALF else x


def MatMul(a, b):
    return np.matmul(_wide(a), _wide(b))


def Gemm(a, b, c=None, *, alpha, beta, transA, transB):
    a, b = _wide(a), _wide(b)
    if transA:
        a = a.T
    if transB:
        b = b.T
    product = np.matmul(a, b)
    if alpha != 1.0:
        product = product * np.asarray(alpha, dtype=_scalar_type(product))
    if c is None:
        return product
    c = _wide(c)
    if beta != 1.0:
        c = c * np.asarray(beta, dtype=_scalar_type(c))
    return product + c


def _scalar_type(x):
    # a float attribute multiplies an int Gemm as a float; keep float32 math float32
    return x.dtype if x.dtype.kind == "f" else np.float64


def Einsum(*inputs, equation):
    operands = [_wide(x) for x in inputs]
    # ONNX allows spaces in the equation; numpy's parser does not everywhere. With two or
    # more operands, optimize lets numpy contract through BLAS (tensordot) instead of loops.
    return np.einsum(equation.replace(" ", ""), *operands, optimize=len(operands) > 1)


def Det(x):
    return np.linalg.det(_wide(x))


def _row_param(param, a):
    """A per-row zero point / scale of `a` given as an M-vector, shaped to broadcast as (M, 1)."""
    if param is None or param.ndim != 1 or a.ndim < 2 or param.shape[0] == 1:
        return param
    return param.reshape(-1, 1)


def _centered(x, zero_point):
    values = x.astype(np.int64) if x.dtype.kind in "iu" else x.astype(np.float64)
    if zero_point is None:
        return values
    return values - zero_point.astype(values.dtype)


def MatMulInteger(a, b, a_zero_point=None, b_zero_point=None):
    # int64 products of 8-bit values are exact; int32 accumulation wraps like the cast below
    product = np.matmul(_centered(a, _row_param(a_zero_point, a)), _centered(b, b_zero_point))
    return product.astype(np.int32)


def QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    a_real = _centered(a, _row_param(a_zero_point, a)) * _row_param(a_scale, a).astype(np.float64)
    b_real = _centered(b, b_zero_point) * b_scale.astype(np.float64)
    product = np.matmul(a_real, b_real)
    return to_quantized(product / y_scale.astype(np.float64), y_zero_point, y_zero_point.dtype)


KERNELS = {
    "MatMul": MatMul,
    "Gemm": Gemm,
    "Einsum": Einsum,
    "Det": Det,
    "MatMulInteger": MatMulInteger,
    "QLinearMatMul": QLinearMatMul,
    "MatMulNBits": MatMulNBits,
}
