# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of shape and layout: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
Concat, Split, Expand, Tile, Pad, Shape, Size, ..."""

import numpy as np

from ...ir.ops.tensor import shape_range


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def Identity(x):
    # a one-tuple, so that a sequence input is one output and not a list of outputs
    return (x,)


def Reshape(data, shape, *, allowzero):
    shape = [int(s) for s in shape]
    if not allowzero:
        shape = [data.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return np.reshape(data, shape)


def Flatten(x, *, axis):
    axis = _axis(axis, x.ndim)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    return x.reshape(outer, -1) if outer else x.reshape(0, int(np.prod(x.shape[axis:])))


def Squeeze(data, axes=None):
    if axes is None:
        return np.squeeze(data)
    return np.squeeze(data, axis=tuple(_axis(int(a), data.ndim) for a in axes.reshape(-1)))


def Unsqueeze(data, axes):
    rank = data.ndim + axes.size
    return np.expand_dims(data, tuple(sorted(_axis(int(a), rank) for a in axes.reshape(-1))))


def Transpose(data, *, perm):
    return np.transpose(data, perm)


def Concat(*inputs, axis):
    return np.concatenate(inputs, axis=axis)


def Split(x, split=None, *, axis, num_outputs):
    axis = _axis(axis, x.ndim)
    size = x.shape[axis]
    if split is None:
        count = num_outputs
        chunk = -(-size // count)
        split = [min(chunk, max(size - chunk * i, 0)) for i in range(count)]
    bounds = np.cumsum([int(s) for s in split])[:-1]
    return tuple(np.split(x, bounds, axis=axis))


def Expand(x, shape):
    target = np.broadcast_shapes(x.shape, tuple(int(s) for s in shape))
    return np.broadcast_to(x, target).copy()


def Tile(x, repeats):
    return np.tile(x, [int(r) for r in repeats])


def _wrap_axis(x, axis, before, after):
    n = x.shape[axis]
    index = np.arange(-before, n + after) % n
    return np.take(x, index, axis=axis)


def Pad(data, pads, constant_value=None, axes=None, *, mode):
    rank = data.ndim
    axes = range(rank) if axes is None else [_axis(int(a), rank) for a in axes]
    pads = [int(p) for p in pads]
    widths = [[0, 0] for _ in range(rank)]
    for j, a in enumerate(axes):
        widths[a] = [pads[j], pads[j + len(axes)]]
    # negative pads crop first; the rest is a plain numpy pad
    crop = tuple(slice(max(-b, 0), data.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(widths))
    data = data[crop]
    widths = [(max(b, 0), max(e, 0)) for b, e in widths]
    if mode == "constant":
        if constant_value is not None and constant_value.size:
            value = constant_value.reshape(-1)[0]
        else:
            value = "" if data.dtype == object else 0
        shape = tuple(d + b + e for d, (b, e) in zip(data.shape, widths))
        out = np.full(shape, value, dtype=data.dtype)
        out[tuple(slice(b, b + d) for d, (b, _) in zip(data.shape, widths))] = data
        return out
    if mode == "wrap":
        for a, (b, e) in enumerate(widths):
            if b or e:
                data = _wrap_axis(data, a, b, e)
        return data
    if mode in ("reflect", "edge"):
        return np.pad(data, widths, mode=mode)
    raise ValueError(f"Pad mode {mode!r} is not one of constant, reflect, edge, wrap")


def Shape(data, *, start, end):
    lo, hi = shape_range(data.ndim, start, end)
    return np.array(data.shape[lo:hi], dtype=np.int64)


def Size(data):
    return np.array(data.size, dtype=np.int64)


def Dropout(data, ratio=None, training_mode=None, *, seed):
    training = training_mode is not None and bool(training_mode)
    if not training:
        return data, np.ones(data.shape, dtype=bool)
    p = 0.5 if ratio is None else float(ratio)
    keep = np.random.default_rng(seed).uniform(size=data.shape) >= p
    scale = 1.0 / (1.0 - p) if p < 1 else 0.0
    return (data * keep * scale).astype(data.dtype), keep


def DepthToSpace(x, *, blocksize, mode):
    n, c, h, w = x.shape
    b = blocksize
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def SpaceToDepth(x, *, blocksize, mode):
    n, c, h, w = x.shape
    b = blocksize
    t = x.reshape(n, c, h // b, b, w // b, b)
    if mode == "DCR":
        t = t.transpose(0, 3, 5, 1, 2, 4)
    else:
        t = t.transpose(0, 1, 3, 5, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


KERNELS = {
    "Identity": Identity,
    "Reshape": Reshape,
    "Flatten": Flatten,
    "Squeeze": Squeeze,
    "Unsqueeze": Unsqueeze,
    "Transpose": Transpose,
    "Concat": Concat,
    "Split": Split,
    "Expand": Expand,
    "Tile": Tile,
    "Pad": Pad,
    "Shape": Shape,
    "Size": Size,
    "Dropout": Dropout,
    "DepthToSpace": DepthToSpace,
    "SpaceToDepth": SpaceToDepth,
}
