# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of pooling: AveragePool, MaxPool, LpPool, Global*Pool, MaxUnpool, MaxRoiPool,
RoiAlign.

Windowed pools reduce the padded input tap by tap, one strided slice per kernel tap (a loop over
the kernel's taps, never over output pixels)."""

from __future__ import annotations

import math

import numpy as np

from ...ir.ops.conv import window_geometry
from .conv import compute_dtype, pad_spatial, tap_slices


def _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode):
    n = len(kernel_shape)
    strides = tuple(strides or (1,) * n)
    dilations = tuple(dilations or (1,) * n)
    begin, end, out = window_geometry(
        x.shape[2:], kernel_shape, strides, dilations, pads, auto_pad or "NOTSET", bool(ceil_mode)
    )
    return strides, dilations, begin, end, out


def _fold(xp, kernel, strides, dilations, out, combine):
    head = (slice(None),) * (xp.ndim - len(kernel))
    result = None
    for _, where in tap_slices(kernel, strides, dilations, out):
        part = xp[head + where]
        result = part.copy() if result is None else combine(result, part, out=result)
    return result


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" or dtype.kind == "V" else np.iinfo(dtype).min


def AveragePool(
    x, *, auto_pad, ceil_mode, count_include_pad, dilations, kernel_shape, pads, strides
):
    compute = compute_dtype(x.dtype)
    strides, dilations, begin, end, out = _geometry(
        x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode
    )
    xp = pad_spatial(x.astype(compute, copy=False), begin, end)
    total = _fold(xp, kernel_shape, strides, dilations, out, np.add)
    # The divisor per window: how many of its taps fall on counted cells (the input, plus the
    # declared pads when count_include_pad; never the extension ceil_mode adds).
    n = len(kernel_shape)
    counted = np.ones(x.shape[2:], dtype=compute)
    if count_include_pad:
        if (auto_pad or "NOTSET") == "NOTSET":
            declared_end = list(pads[n:]) if pads else [0] * n
        else:
            declared_end = end
        counted = pad_spatial(counted, begin, declared_end, 1)
        counted = pad_spatial(counted, [0] * n, [e - d for e, d in zip(end, declared_end)], 0)
    else:
        counted = pad_spatial(counted, begin, end, 0)
    counts = _fold(counted, kernel_shape, strides, dilations, out, np.add)
    return (total / np.maximum(counts, 1)).astype(x.dtype, copy=False)


def MaxPool(x, *, auto_pad, ceil_mode, dilations, kernel_shape, pads, storage_order, strides):
    strides, dilations, begin, end, out = _geometry(
        x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode
    )
    xp = pad_spatial(x, begin, end, _lowest(x.dtype))
    y = _fold(xp, kernel_shape, strides, dilations, out, np.maximum)
    return y, _max_indices(x, xp, y, kernel_shape, strides, dilations, begin, out, storage_order)


def _max_indices(x, xp, y, kernel, strides, dilations, begin, out, storage_order):
    """Flat index into x of the first tap holding each window's maximum."""
    n = len(kernel)
    sizes = x.shape[2:]
    found = np.zeros(y.shape, dtype=bool)
    index = np.zeros(y.shape, dtype=np.int64)
    head = (slice(None),) * 2
    grids = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    axes_order = tuple(reversed(range(n))) if storage_order else tuple(range(n))
    for tap, where in tap_slices(kernel, strides, dilations, out):
        hit = (xp[head + where] == y) & ~found
        if not hit.any():
            continue
        linear = 0
        for axis in axes_order:
            coord = grids[axis] * strides[axis] - begin[axis] + tap[axis] * dilations[axis]
            linear = linear * sizes[axis] + coord
        index = np.where(hit, linear, index)
        found |= hit
    plane = math.prod(sizes)
    base = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * n)
    return index + base * plane


def LpPool(x, *, auto_pad, ceil_mode, dilations, kernel_shape, p, pads, strides):
    compute = compute_dtype(x.dtype)
    strides, dilations, begin, end, out = _geometry(
        x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode
    )
    powered = np.abs(x.astype(compute, copy=False)) ** p
    total = _fold(pad_spatial(powered, begin, end), kernel_shape, strides, dilations, out, np.add)
    return (total ** (1.0 / p)).astype(x.dtype, copy=False)


def _spatial_axes(x):
    return tuple(range(2, x.ndim))


def GlobalAveragePool(x):
    compute = compute_dtype(x.dtype)
    return x.astype(compute, copy=False).mean(axis=_spatial_axes(x), keepdims=True).astype(x.dtype)


def GlobalMaxPool(x):
    return x.max(axis=_spatial_axes(x), keepdims=True)


def GlobalLpPool(x, *, p):
    compute = compute_dtype(x.dtype)
    total = (np.abs(x.astype(compute, copy=False)) ** p).sum(axis=_spatial_axes(x), keepdims=True)
    return (total ** (1.0 / p)).astype(x.dtype)


def MaxUnpool(x, indices, output_shape=None, *, kernel_shape, pads, strides):
    n = x.ndim - 2
    # The indices are flat positions in the pooled input, whose shape the attributes give; an
    # output_shape of other sizes keeps each value at the same coordinates.
    strides = tuple(strides or (1,) * n)
    pads = tuple(pads or (0,) * (2 * n))
    source = x.shape[:2] + tuple(
        (x.shape[2 + i] - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[i + n]
        for i in range(n)
    )
    if output_shape is None:
        shape = source
    else:
        shape = tuple(int(v) for v in output_shape.reshape(-1))
    flat_index, values = indices.reshape(-1), x.reshape(-1)
    if shape != source:
        coords = np.unravel_index(flat_index, source)
        keep = np.logical_and.reduce([c < size for c, size in zip(coords, shape)])
        flat_index = np.ravel_multi_index([c[keep] for c in coords], shape)
        values = values[keep]
    flat = np.zeros(math.prod(shape), dtype=x.dtype)
    flat[flat_index] = values
    return flat.reshape(shape)


def MaxRoiPool(x, rois, *, pooled_shape, spatial_scale):
    # Caffe's RoI pooling: the RoI is rounded to whole cells, each bin spans floor..ceil of its
    # fractional extent, empty bins give 0.
    n_rois, channels = rois.shape[0], x.shape[1]
    height, width = x.shape[2:]
    out_h, out_w = pooled_shape
    y = np.zeros((n_rois, channels, out_h, out_w), dtype=x.dtype)
    for r in range(n_rois):
        batch = int(rois[r, 0])
        x1, y1, x2, y2 = (int(np.round(float(v) * spatial_scale)) for v in rois[r, 1:5])
        roi_h, roi_w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for ph in range(out_h):
            h0 = min(max(math.floor(ph * roi_h / out_h) + y1, 0), height)
            h1 = min(max(math.ceil((ph + 1) * roi_h / out_h) + y1, 0), height)
            for pw in range(out_w):
                w0 = min(max(math.floor(pw * roi_w / out_w) + x1, 0), width)
                w1 = min(max(math.ceil((pw + 1) * roi_w / out_w) + x1, 0), width)
                if h1 > h0 and w1 > w0:
                    y[r, :, ph, pw] = x[batch, :, h0:h1, w0:w1].max(axis=(1, 2))
    return y


def _bilinear_axis(coords, size):
    """Per sample coordinate: low/high cell, their weights, and whether it is inside."""
    inside = (coords >= -1.0) & (coords <= size)
    c = np.maximum(coords, 0.0)
    low = np.floor(c).astype(np.int64)
    at_edge = low >= size - 1
    low = np.where(at_edge, size - 1, low)
    high = np.where(at_edge, size - 1, low + 1)
    c = np.where(at_edge, low.astype(c.dtype), c)
    frac = c - low
    return low, high, 1.0 - frac, frac, inside


def RoiAlign(
    x,
    rois,
    batch_indices,
    *,
    coordinate_transformation_mode,
    mode,
    output_height,
    output_width,
    sampling_ratio,
    spatial_scale,
):
    compute = np.float64
    n_rois, channels = rois.shape[0], x.shape[1]
    height, width = x.shape[2:]
    half_pixel = coordinate_transformation_mode == "half_pixel"
    shift = 0.5 if half_pixel else 0.0
    y = np.zeros((n_rois, channels, output_height, output_width), dtype=compute)
    for r in range(n_rois):
        image = x[int(batch_indices[r])].astype(compute)
        x1, y1, x2, y2 = (float(v) * spatial_scale - shift for v in rois[r])
        roi_w, roi_h = x2 - x1, y2 - y1
        if not half_pixel:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / output_height, roi_w / output_width
        grid_h = sampling_ratio if sampling_ratio > 0 else max(1, math.ceil(roi_h / output_height))
        grid_w = sampling_ratio if sampling_ratio > 0 else max(1, math.ceil(roi_w / output_width))
        ys = (
            y1
            + np.arange(output_height)[:, None] * bin_h
            + (np.arange(grid_h) + 0.5) * bin_h / grid_h
        )
        xs = (
            x1
            + np.arange(output_width)[:, None] * bin_w
            + (np.arange(grid_w) + 0.5) * bin_w / grid_w
        )
        y_lo, y_hi, wy_lo, wy_hi, y_in = _bilinear_axis(ys, height)  # (out_h, grid_h)
        x_lo, x_hi, wx_lo, wx_hi, x_in = _bilinear_axis(xs, width)  # (out_w, grid_w)
        inside = y_in[:, :, None, None] & x_in[None, None]
        corners = []
        for rows, wy in ((y_lo, wy_lo), (y_hi, wy_hi)):
            for cols, wx in ((x_lo, wx_lo), (x_hi, wx_hi)):
                weight = wy[:, :, None, None] * wx[None, None] * inside
                corners.append(weight * image[:, rows[:, :, None, None], cols[None, None]])
        if mode == "max":
            # each sample contributes its largest weighted corner; the bin takes the largest sample
            sample = np.maximum.reduce(corners)
            y[r] = sample.max(axis=(2, 4))
        else:
            y[r] = sum(corners).mean(axis=(2, 4))
    return y.astype(x.dtype, copy=False)


KERNELS = {
    "AveragePool": AveragePool,
    "MaxPool": MaxPool,
    "LpPool": LpPool,
    "GlobalAveragePool": GlobalAveragePool,
    "GlobalMaxPool": GlobalMaxPool,
    "GlobalLpPool": GlobalLpPool,
    "MaxUnpool": MaxUnpool,
    "MaxRoiPool": MaxRoiPool,
    "RoiAlign": RoiAlign,
}
