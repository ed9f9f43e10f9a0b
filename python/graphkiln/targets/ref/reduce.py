# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of reductions: Reduce*, ArgMax, ArgMin, CumSum, CumProd, TopK."""

import ml_dtypes
import numpy as np


def _axes(data, axes, noop_with_empty_axes):
    """The numpy `axis` tuple: () is numpy's identity reduction, the ONNX no-op."""
    if axes is None or axes.size == 0:
        return () if noop_with_empty_axes else tuple(range(data.ndim))
    if data.ndim == 0:  # a scalar has nothing to reduce; axes 0 / -1 name it anyway
        return ()
    return tuple(sorted({int(a) % data.ndim for a in axes.reshape(-1)}))


def _wide(data):
    """Accumulate half-precision floats in float32 (the evaluator casts the result back)."""
    if data.dtype in (np.float16, ml_dtypes.bfloat16):
        return data.astype(np.float32)
    return data


def _float(data):
    return data if data.dtype.kind in "fc" and data.dtype.itemsize >= 4 else data.astype(np.float64)


def _limits(dtype):
    """(lowest, highest) of a dtype: the identities of ReduceMax / ReduceMin."""
    if dtype == np.bool_:
        return False, True
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min, info.max
    return -np.inf, np.inf


def ReduceSum(data, axes=None, *, keepdims, noop_with_empty_axes):
    x = _wide(data)
    axis = _axes(data, axes, noop_with_empty_axes)
    return np.sum(x, axis=axis, keepdims=bool(keepdims), dtype=x.dtype)


def ReduceMean(data, axes=None, *, keepdims, noop_with_empty_axes):
    x = _float(data)
    axis = _axes(data, axes, noop_with_empty_axes)
    count = int(np.prod([data.shape[a] for a in axis]))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(x, axis=axis, keepdims=bool(keepdims)) / x.dtype.type(count)


def ReduceMax(data, axes=None, *, keepdims, noop_with_empty_axes):
    axis = _axes(data, axes, noop_with_empty_axes)
    x = _wide(data)
    return np.max(x, axis=axis, keepdims=bool(keepdims), initial=_limits(x.dtype)[0])


def ReduceMin(data, axes=None, *, keepdims, noop_with_empty_axes):
    axis = _axes(data, axes, noop_with_empty_axes)
    x = _wide(data)
    return np.min(x, axis=axis, keepdims=bool(keepdims), initial=_limits(x.dtype)[1])


def ReduceProd(data, axes=None, *, keepdims, noop_with_empty_axes):
    x = _wide(data)
    axis = _axes(data, axes, noop_with_empty_axes)
    return np.prod(x, axis=axis, keepdims=bool(keepdims), dtype=x.dtype)


def ReduceL1(data, axes=None, *, keepdims, noop_with_empty_axes):
    x = _wide(data)
    axis = _axes(data, axes, noop_with_empty_axes)
    return np.sum(np.abs(x), axis=axis, keepdims=bool(keepdims), dtype=x.dtype)


def ReduceL2(data, axes=None, *, keepdims, noop_with_empty_axes):
    x = _float(data)
    axis = _axes(data, axes, noop_with_empty_axes)
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=bool(keepdims)))


def ReduceSumSquare(data, axes=None, *, keepdims, noop_with_empty_axes):
    x = _wide(data)
    axis = _axes(data, axes, noop_with_empty_axes)
    return np.sum(x * x, axis=axis, keepdims=bool(keepdims), dtype=x.dtype)


def ReduceLogSum(data, axes=None, *, keepdims, noop_with_empty_axes):
    x = _float(data)
    axis = _axes(data, axes, noop_with_empty_axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.sum(x, axis=axis, keepdims=bool(keepdims)))


def ReduceLogSumExp(data, axes=None, *, keepdims, noop_with_empty_axes):
    x = _float(data)
    axis = _axes(data, axes, noop_with_empty_axes)
    # shift by the maximum so exp cannot overflow; an all -inf (or empty) slice shifts by 0
    peak = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    peak = np.where(np.isfinite(peak), peak, 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        total = np.sum(np.exp(x - peak), axis=axis, keepdims=True)
        result = np.log(total) + peak
    return result if keepdims else np.squeeze(result, axis=axis)


def _arg(data, axis, keepdims, select_last_index, pick):
    axis = axis % max(data.ndim, 1)
    x = _wide(data)
    if select_last_index:
        # the first hit in the reversed axis is the last hit in the original order
        index = data.shape[axis] - 1 - pick(np.flip(x, axis=axis), axis=axis)
    else:
        index = pick(x, axis=axis)
    index = index.astype(np.int64)
    return np.expand_dims(index, axis) if keepdims else index


def ArgMax(data, *, axis, keepdims, select_last_index):
    return _arg(data, axis, keepdims, select_last_index, np.argmax)


def ArgMin(data, *, axis, keepdims, select_last_index):
    return _arg(data, axis, keepdims, select_last_index, np.argmin)


def _cumulative(x, axis, exclusive, reverse, accumulate, identity):
    axis = int(np.asarray(axis).reshape(-1)[0]) % max(x.ndim, 1)
    wide = _wide(x)
    if reverse:
        wide = np.flip(wide, axis=axis)
    result = accumulate(wide, axis=axis, dtype=wide.dtype)
    if exclusive and x.shape[axis] > 0:
        # shift by one along the axis: element i gets the total of elements before it
        head_shape = list(result.shape)
        head_shape[axis] = 1
        head = np.full(head_shape, identity, dtype=result.dtype)
        body = np.take(result, np.arange(x.shape[axis] - 1), axis=axis)
        result = np.concatenate([head, body], axis=axis)
    if reverse:
        result = np.flip(result, axis=axis)
    return result


def CumSum(x, axis, *, exclusive, reverse):
    return _cumulative(x, axis, exclusive, reverse, np.cumsum, 0)


def CumProd(x, axis, *, exclusive, reverse):
    return _cumulative(x, axis, exclusive, reverse, np.cumprod, 1)


def TopK(x, k, *, axis, largest, sorted):
    axis = axis % max(x.ndim, 1)
    count = int(np.asarray(k).reshape(-1)[0])
    keys = _wide(x)
    n = x.shape[axis]
    if largest:
        # A stable ascending sort of the reversed axis, read backwards, is descending with
        # ties in increasing index order (ONNX: the lower index comes first).
        order = np.argsort(np.flip(keys, axis=axis), axis=axis, kind="stable")
        order = n - 1 - np.flip(order, axis=axis)
    else:
        order = np.argsort(keys, axis=axis, kind="stable")
    indices = np.take(order, np.arange(count), axis=axis).astype(np.int64)
    return np.take_along_axis(x, indices, axis=axis), indices


KERNELS = {
    "ReduceSum": ReduceSum,
    "ReduceMean": ReduceMean,
    "ReduceMax": ReduceMax,
    "ReduceMin": ReduceMin,
    "ReduceProd": ReduceProd,
    "ReduceL1": ReduceL1,
    "ReduceL2": ReduceL2,
    "ReduceSumSquare": ReduceSumSquare,
    "ReduceLogSum": ReduceLogSum,
    "ReduceLogSumExp": ReduceLogSumExp,
    "ArgMax": ArgMax,
    "ArgMin": ArgMin,
    "CumSum": CumSum,
    "CumProd": CumProd,
    "TopK": TopK,
}
