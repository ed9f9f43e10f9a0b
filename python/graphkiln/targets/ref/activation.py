# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of activations: Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish,
Gelu, Mish, ..."""

import functools
import math

import numpy as np

from .elementwise import compute_dtype, erf


def _float_kernel(fn):
    """Run `fn(x, **attrs)` in compute_dtype (float32, or float64 for float64 input) and
    return the input's dtype: float16 / bfloat16 results are rounded once, at the end."""

    @functools.wraps(fn)
    def kernel(x, **attrs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(compute_dtype(x.dtype)), **attrs)).astype(x.dtype)

    return kernel


def Relu(x):
    return np.maximum(x, np.zeros((), dtype=x.dtype))


@_float_kernel
def LeakyRelu(x, *, alpha=0.01):
    return np.where(x < 0, x * x.dtype.type(alpha), x)


def PRelu(x, slope):
    if x.dtype.kind in "iu":
        return np.where(x < 0, x * slope, x).astype(x.dtype)
    wide = compute_dtype(x.dtype)
    with np.errstate(all="ignore"):
        xw = x.astype(wide)
        return np.where(xw < 0, xw * slope.astype(wide), xw).astype(x.dtype)


@_float_kernel
def Elu(x, *, alpha=1.0):
    return np.where(x > 0, x, x.dtype.type(alpha) * np.expm1(x))


@_float_kernel
def Selu(x, *, alpha=1.6732632, gamma=1.050701):
    a, g = x.dtype.type(alpha), x.dtype.type(gamma)
    return np.where(x > 0, g * x, g * a * np.expm1(x))


@_float_kernel
def Celu(x, *, alpha=1.0):
    a = x.dtype.type(alpha)
    return np.maximum(x, 0) + np.minimum(0, a * np.expm1(x / a))


def _sigmoid(x):
    # exp of a non-positive number only, so large |x| neither overflows nor loses the tail
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


Sigmoid = _float_kernel(_sigmoid)


@_float_kernel
def HardSigmoid(x, *, alpha=0.2, beta=0.5):
    return np.clip(x * x.dtype.type(alpha) + x.dtype.type(beta), 0, 1)


@_float_kernel
def HardSwish(x):
    return x * np.clip(x / 6 + 0.5, 0, 1)


def _softplus(x):
    return np.logaddexp(0, x)


Softplus = _float_kernel(_softplus)


@_float_kernel
def Softsign(x):
    return x / (1 + np.abs(x))


Tanh = _float_kernel(np.tanh)


@_float_kernel
def ThresholdedRelu(x, *, alpha=1.0):
    return np.where(x > x.dtype.type(alpha), x, 0)


def Shrink(x, *, bias=0.0, lambd=0.5):
    # any numeric type: integers are shifted in float64 and converted back
    wide = np.float64 if x.dtype.kind in "iu" else compute_dtype(x.dtype)
    xw = x.astype(wide)
    out = np.where(xw < -lambd, xw + bias, np.where(xw > lambd, xw - bias, 0))
    return out.astype(x.dtype)


@_float_kernel
def Mish(x):
    return x * np.tanh(_softplus(x))


@_float_kernel
def Gelu(x, *, approximate="none"):
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1 + np.tanh(inner))
    if approximate != "none":
        raise ValueError(f"Gelu approximate must be 'none' or 'tanh', got {approximate!r}")
    return 0.5 * x * (1 + erf(x / math.sqrt(2)).astype(x.dtype))


@_float_kernel
def Swish(x, *, alpha=1.0):
    return x * _sigmoid(x * x.dtype.type(alpha))


KERNELS = {
    "Relu": Relu,
    "LeakyRelu": LeakyRelu,
    "PRelu": PRelu,
    "Elu": Elu,
    "Selu": Selu,
    "Celu": Celu,
    "Sigmoid": Sigmoid,
    "HardSigmoid": HardSigmoid,
    "HardSwish": HardSwish,
    "Softplus": Softplus,
    "Softsign": Softsign,
    "Tanh": Tanh,
    "ThresholdedRelu": ThresholdedRelu,
    "Shrink": Shrink,
    "Mish": Mish,
    "Gelu": Gelu,
    "Swish": Swish,
}
