# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of normalizations: BatchNormalization, LayerNormalization, InstanceNormalization,
GroupNormalization, RMSNormalization, LRN, MeanVarianceNormalization, LpNormalization."""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import DType
from .conv import compute_dtype


def _per_channel(p, x, dtype):
    """A per-channel parameter shaped to broadcast over x (N, C, ...). Parameters of more than
    one dim (the old non-spatial BatchNormalization) already cover C and the spatial dims."""
    p = np.asarray(p).astype(dtype, copy=False)
    if p.ndim <= 1:
        return p.reshape((-1,) + (1,) * (x.ndim - 2))
    return p


def BatchNormalization(x, scale, b, input_mean, input_var, *, epsilon, momentum, training_mode):
    compute = compute_dtype(x.dtype)
    xs = x.astype(compute, copy=False)
    if training_mode:
        axes = (0,) + tuple(range(2, x.ndim))
        mean = xs.mean(axis=axes, keepdims=True)[0]
        var = xs.var(axis=axes, keepdims=True)[0]
    else:
        mean = _per_channel(input_mean, x, compute)
        var = _per_channel(input_var, x, compute)
    # folded into one multiply-add per element: y = x * gain + shift
    gain = _per_channel(scale, x, compute) / np.sqrt(var + compute.type(epsilon))
    shift = _per_channel(b, x, compute) - mean * gain
    y = (xs * gain + shift).astype(x.dtype, copy=False)
    if not training_mode:
        return y
    stats_dtype = input_mean.dtype
    running_mean = input_mean * momentum + mean.reshape(input_mean.shape) * (1 - momentum)
    running_var = input_var * momentum + var.reshape(input_var.shape) * (1 - momentum)
    return y, running_mean.astype(stats_dtype), running_var.astype(stats_dtype)


def InstanceNormalization(x, scale, b, *, epsilon):
    compute = compute_dtype(x.dtype)
    xs = x.astype(compute, copy=False)
    axes = tuple(range(2, x.ndim))
    mean = xs.mean(axis=axes, keepdims=True)
    var = xs.var(axis=axes, keepdims=True)
    y = (xs - mean) / np.sqrt(var + compute.type(epsilon))
    y = y * _per_channel(scale, x, compute) + _per_channel(b, x, compute)
    return y.astype(x.dtype, copy=False)


def _stash(stash_type) -> np.dtype:
    return DType.from_onnx(stash_type).numpy


def _normalize(xs, axes, epsilon):
    """(normalized, mean, inverse std dev) over `axes`, all in xs's dtype."""
    mean = xs.mean(axis=axes, keepdims=True)
    centered = xs - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(var + xs.dtype.type(epsilon))
    return centered * inv_std, mean, inv_std


def LayerNormalization(x, scale, b=None, *, axis, epsilon, stash_type):
    # Stage one (statistics, normalizing) in the stash type; stage two in X's own type.
    stash = _stash(stash_type)
    axis = axis % x.ndim if x.ndim else 0
    axes = tuple(range(axis, x.ndim))
    normalized, mean, inv_std = _normalize(x.astype(stash), axes, epsilon)
    y = normalized.astype(x.dtype) * scale
    if b is not None:
        y = y + b
    return y.astype(x.dtype, copy=False), mean, inv_std


def GroupNormalization(x, scale, bias, *, epsilon, num_groups, stash_type):
    stash = _stash(stash_type)
    grouped = x.astype(stash).reshape(x.shape[0], num_groups, -1)
    normalized, _, _ = _normalize(grouped, (2,), epsilon)
    normalized = normalized.reshape(x.shape).astype(x.dtype)
    y = normalized * _per_channel(scale, x, x.dtype) + _per_channel(bias, x, x.dtype)
    return y.astype(x.dtype, copy=False)


def RMSNormalization(x, scale, *, axis, epsilon, stash_type):
    stash = _stash(stash_type)
    axis = axis % x.ndim if x.ndim else 0
    xs = x.astype(stash)
    mean_square = (xs * xs).mean(axis=tuple(range(axis, x.ndim)), keepdims=True)
    normalized = xs / np.sqrt(mean_square + stash.type(epsilon))
    return (normalized.astype(x.dtype) * scale).astype(x.dtype, copy=False)


def LRN(x, *, alpha, beta, bias, size):
    compute = compute_dtype(x.dtype)
    squares = np.square(x.astype(compute, copy=False))
    before, after = (size - 1) // 2, size // 2  # floor and ceil of (size - 1) / 2
    widths = [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2)
    padded = np.pad(squares, widths)
    channels = x.shape[1]
    square_sum = sum(padded[:, i : i + channels] for i in range(size))
    y = (
        x.astype(compute, copy=False)
        / (compute.type(bias) + compute.type(alpha / size) * square_sum) ** beta
    )
    return y.astype(x.dtype, copy=False)


def MeanVarianceNormalization(x, *, axes):
    compute = compute_dtype(x.dtype)
    xs = x.astype(compute, copy=False)
    axes = tuple(a % x.ndim for a in axes)
    mean = xs.mean(axis=axes, keepdims=True)
    variance = (xs * xs).mean(axis=axes, keepdims=True) - mean * mean
    # ONNX's definition adds 1e-9 to the standard deviation (not to the variance)
    std = np.sqrt(np.maximum(variance, 0))
    return ((xs - mean) / (std + compute.type(1e-9))).astype(x.dtype, copy=False)


def LpNormalization(x, *, axis, p):
    compute = compute_dtype(x.dtype)
    xs = x.astype(compute, copy=False)
    if p == 1:
        norm = np.abs(xs).sum(axis=axis, keepdims=True)
    elif p == 2:
        norm = np.sqrt((xs * xs).sum(axis=axis, keepdims=True))
    else:
        raise ValueError(f"LpNormalization: p must be 1 or 2, got {p}")
    # a vector of zeros stays zeros rather than becoming NaN
    y = np.divide(xs, norm, out=np.zeros_like(xs), where=norm != 0)
    return y.astype(x.dtype, copy=False)


KERNELS = {
    "BatchNormalization": BatchNormalization,
    "InstanceNormalization": InstanceNormalization,
    "LayerNormalization": LayerNormalization,
    "GroupNormalization": GroupNormalization,
    "RMSNormalization": RMSNormalization,
    "LRN": LRN,
    "MeanVarianceNormalization": MeanVarianceNormalization,
    "LpNormalization": LpNormalization,
}
