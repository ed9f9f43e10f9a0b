# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of indexing: Slice, Gather*, Scatter*, OneHot, NonZero, Compress, Trilu, Unique,
ReverseSequence, ...."""

import numpy as np

from ...ir.ops.indexing import slice_bounds


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _wrap(indices, size):
    """Negative indices count from the end."""
    indices = np.asarray(indices).astype(np.int64)
    return np.where(indices < 0, indices + size, indices)


def Slice(data, starts, ends, axes=None, steps=None):
    n = starts.size
    axes = range(n) if axes is None else [_axis(int(a), data.ndim) for a in axes]
    steps = [1] * n if steps is None else [int(s) for s in steps]
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts.tolist(), ends.tolist(), axes, steps):
        lo, hi, count = slice_bounds(data.shape[axis], int(start), int(end), step)
        index[axis] = slice(lo, hi if hi >= 0 else None, step) if count else slice(0, 0)
    return data[tuple(index)]


def Gather(data, indices, *, axis):
    axis = _axis(axis, data.ndim)
    return np.take(data, _wrap(indices, data.shape[axis]), axis=axis)


def GatherElements(data, indices, *, axis):
    axis = _axis(axis, data.ndim)
    return np.take_along_axis(data, _wrap(indices, data.shape[axis]), axis=axis)


def GatherND(data, indices, *, batch_dims):
    b = batch_dims
    depth = indices.shape[-1]
    batch = int(np.prod(data.shape[:b], dtype=np.int64))
    inner = data.reshape((batch,) + data.shape[b:])
    points = _wrap(indices.reshape(batch, -1, depth), np.array(data.shape[b : b + depth]))
    parts = [inner[i][tuple(points[i].T)] for i in range(batch)]
    out_shape = indices.shape[:-1] + data.shape[b + depth :]
    if not parts:
        return np.zeros(out_shape, dtype=data.dtype)
    return np.stack(parts).reshape(out_shape)


_SCATTER_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter(out, where, updates, reduction):
    if reduction == "none":
        out[where] = updates
    elif reduction in _SCATTER_UFUNCS:
        _SCATTER_UFUNCS[reduction].at(out, where, updates)
    else:
        raise ValueError(f"unknown scatter reduction {reduction!r}")
    return out


def ScatterElements(data, indices, updates, *, axis, reduction):
    axis = _axis(axis, data.ndim)
    where = list(np.indices(indices.shape, sparse=True))
    where[axis] = _wrap(indices, data.shape[axis])
    where = tuple(np.broadcast_to(w, indices.shape) for w in where)
    return _scatter(data.copy(), where, updates, reduction)


def ScatterND(data, indices, updates, *, reduction):
    depth = indices.shape[-1]
    points = _wrap(indices.reshape(-1, depth), np.array(data.shape[:depth]))
    rows = updates.reshape((-1,) + data.shape[depth:])
    return _scatter(data.copy(), tuple(points.T), rows, reduction)


def OneHot(indices, depth, values, *, axis):
    depth = int(np.asarray(depth).reshape(-1)[0])
    axis = _axis(axis, indices.ndim + 1)
    idx = _wrap(indices, depth)
    hot = np.expand_dims(idx, -1) == np.arange(depth)
    hot = np.moveaxis(hot, -1, axis)
    off, on = values.reshape(-1)[:2]
    return np.where(hot, on, off).astype(values.dtype)


def NonZero(x):
    if x.ndim == 0:
        return np.zeros((0, int(bool(x))), dtype=np.int64)
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


def Compress(data, condition, *, axis):
    condition = np.asarray(condition, dtype=bool).reshape(-1)
    if axis is None:
        return np.compress(condition, data.reshape(-1))
    return np.compress(condition, data, axis=_axis(axis, data.ndim))


def Trilu(x, k=None, *, upper):
    k = 0 if k is None else int(np.asarray(k).reshape(-1)[0])
    return np.triu(x, k) if upper else np.tril(x, k)


def Unique(x, *, axis, sorted):
    data = x.reshape(-1) if axis is None else x
    ax = None if axis is None else _axis(axis, x.ndim)
    y, first, inverse, counts = np.unique(
        data, return_index=True, return_inverse=True, return_counts=True, axis=ax
    )
    inverse = inverse.reshape(-1)
    if not sorted:
        # order of first occurrence: renumber the sorted groups
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=0 if ax is None else ax)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    i64 = np.int64
    return y, first.astype(i64), inverse.astype(i64), counts.astype(i64)


def ReverseSequence(x, sequence_lens, *, batch_axis, time_axis):
    out = x.copy()
    for b, length in enumerate(np.asarray(sequence_lens).reshape(-1)):
        length = int(length)
        index = [slice(None)] * x.ndim
        index[batch_axis] = b
        index[time_axis] = slice(0, length)
        reversed_index = list(index)
        reversed_index[time_axis] = slice(length - 1, None, -1) if length > 0 else slice(0, 0)
        out[tuple(index)] = x[tuple(reversed_index)]
    return out


def TensorScatter(past_cache, update, write_indices=None, *, mode, axis):
    axis = _axis(axis, past_cache.ndim)
    capacity, length = past_cache.shape[axis], update.shape[axis]
    out = past_cache.copy()
    for b in range(past_cache.shape[0]):
        start = 0 if write_indices is None else int(write_indices.reshape(-1)[b])
        positions = start + np.arange(length)
        if mode == "circular":
            positions %= capacity
        # index within batch b, so that `positions` is the only advanced index
        out[b][(slice(None),) * (axis - 1) + (positions,)] = update[b]
    return out


KERNELS = {
    "Slice": Slice,
    "Gather": Gather,
    "GatherElements": GatherElements,
    "GatherND": GatherND,
    "ScatterElements": ScatterElements,
    "ScatterND": ScatterND,
    "OneHot": OneHot,
    "NonZero": NonZero,
    "Compress": Compress,
    "Trilu": Trilu,
    "Unique": Unique,
    "ReverseSequence": ReverseSequence,
    "TensorScatter": TensorScatter,
}
