# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of image ops: Resize, GridSample, AffineGrid, CenterCropPad, NonMaxSuppression.

Resize and GridSample are separable: each spatial axis gets a table of source indices and
weights (one column per filter tap), and the output is a weighted sum of gathered inputs."""

import itertools

import numpy as np

from ...ir.ops.image import resize_axes, resize_plan


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    return (
        np.dtype(np.float32) if dtype == np.float32 or dtype.itemsize < 4 else np.dtype(np.float64)
    )


def _cast_back(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):  # image data (uint8 ...) rounds and saturates
        info = np.iinfo(dtype)
        return np.clip(np.rint(y), info.min, info.max).astype(dtype)
    return y.astype(dtype, copy=False)


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with parameter a, at distances t."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _source_coordinates(mode, out_len, in_len, scale, roi_start, roi_end):
    x = np.arange(out_len, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = out_len / (scale * in_len)
        offset = in_len / 2 * (1 - adjustment)
        return offset + (x + 0.5) / scale - 0.5
    # the spec defines scale = length_resized / length_original, so length_resized is
    # in_len * scale, fractional when scales (not sizes) were given
    resized = in_len * scale
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if resized > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * (in_len - 1) / (resized - 1) if resized != 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if mode == "tf_crop_and_resize":
        if out_len > 1:
            return roi_start * (in_len - 1) + x * (roi_end - roi_start) * (in_len - 1) / (
                out_len - 1
            )
        return np.full_like(x, 0.5 * (roi_start + roi_end) * (in_len - 1))
    raise ValueError(f"Resize: unknown coordinate_transformation_mode {mode!r}")


def _nearest_index(x: np.ndarray, nearest_mode: str) -> np.ndarray:
    if nearest_mode == "round_prefer_floor":
        return np.ceil(x - 0.5)
    if nearest_mode == "round_prefer_ceil":
        return np.floor(x + 0.5)
    if nearest_mode == "floor":
        return np.floor(x)
    if nearest_mode == "ceil":
        return np.ceil(x)
    raise ValueError(f"Resize: unknown nearest_mode {nearest_mode!r}")


def _filter_taps(x, in_len, scale, mode, a, antialias, exclude_outside):
    """(indices, weights), each (len(x), taps): the linear or cubic filter at coordinates x,
    stretched by 1/scale when antialiasing a downscale."""
    stretch = min(scale, 1.0) if antialias else 1.0
    radius = 1.0 if mode == "linear" else 2.0
    first = int(np.floor(-radius / stretch)) + 1
    offsets = np.arange(first, 2 - first)  # every k with |k - fraction| * stretch < radius
    base = np.floor(x)
    dist = (offsets[None, :] - (x - base)[:, None]) * stretch
    if mode == "linear":
        weights = np.clip(1 - np.abs(dist), 0, 1)
    else:
        weights = _cubic(dist, a)
    index = base[:, None].astype(np.int64) + offsets[None, :]
    if exclude_outside:
        weights = np.where((index >= 0) & (index < in_len), weights, 0.0)
    total = weights.sum(axis=1, keepdims=True)
    if antialias or exclude_outside:
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(index, 0, in_len - 1), weights


def _apply_axis(data, axis, index, weights, compute_dtype):
    trailing = (1,) * (data.ndim - axis - 1)
    if weights is None:
        return np.take(data, index[:, 0], axis=axis)
    acc = None
    for k in range(index.shape[1]):
        term = np.take(data, index[:, k], axis=axis)  # a fresh array: scaled in place
        term *= weights[:, k].astype(compute_dtype).reshape((-1,) + trailing)
        if acc is None:
            acc = term
        else:
            acc += term
    return acc


def Resize(
    x,
    roi=None,
    scales=None,
    sizes=None,
    *,
    mode,
    coordinate_transformation_mode,
    nearest_mode,
    cubic_coeff_a,
    exclude_outside,
    extrapolation_value,
    antialias,
    axes,
    keep_aspect_ratio_policy,
):
    if mode not in ("nearest", "linear", "cubic"):
        raise ValueError(f"Resize: unknown mode {mode!r}")
    if scales is not None and scales.size == 0:
        scales = None
    if roi is not None and roi.size == 0:
        roi = None
    coord_mode = coordinate_transformation_mode
    out_dims, scale = resize_plan(x.shape, scales, sizes, axes, keep_aspect_ratio_policy)
    ax = resize_axes(axes, x.ndim)
    roi_full = np.array([0.0] * x.ndim + [1.0] * x.ndim)
    if roi is not None:
        r = np.asarray(roi, dtype=np.float64).reshape(-1)
        for i, a in enumerate(ax):
            roi_full[a], roi_full[x.ndim + a] = r[i], r[len(ax) + i]
    interpolate = mode != "nearest"
    compute_dtype = _compute_dtype(x.dtype) if interpolate else x.dtype
    y = x.astype(compute_dtype, copy=False)
    outside_masks = []
    # shrinking axes first keeps the intermediate results small
    for a in sorted(range(x.ndim), key=lambda i: out_dims[i] / max(x.shape[i], 1)):
        in_len, out_len = x.shape[a], out_dims[a]
        shifts = coord_mode in ("tf_crop_and_resize", "tf_half_pixel_for_nn")
        if a not in ax or (in_len == out_len and scale[a] == 1 and not shifts):
            continue  # an identity along this axis
        if in_len == 0 or out_len == 0:
            y = (
                np.take(y, np.zeros(out_len, np.int64), axis=a)
                if in_len
                else np.zeros(y.shape[:a] + (out_len,) + y.shape[a + 1 :], y.dtype)
            )
            continue
        coords = _source_coordinates(
            coord_mode, out_len, in_len, scale[a], roi_full[a], roi_full[x.ndim + a]
        )
        if coord_mode == "tf_crop_and_resize":
            outside = (coords < 0) | (coords > in_len - 1)
            if outside.any():
                shape = [1] * x.ndim
                shape[a] = out_len
                outside_masks.append(outside.reshape(shape))
        if interpolate:
            index, weights = _filter_taps(
                coords, in_len, scale[a], mode, cubic_coeff_a, antialias, exclude_outside
            )
        else:
            index = np.clip(_nearest_index(coords, nearest_mode), 0, in_len - 1)
            index, weights = index.astype(np.int64)[:, None], None
        y = _apply_axis(y, a, index, weights, compute_dtype)
    if outside_masks:
        mask = np.logical_or.reduce(np.broadcast_arrays(*outside_masks))
        y = np.where(mask, np.asarray(extrapolation_value).astype(y.dtype), y)
    return _cast_back(y, x.dtype) if interpolate else y


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    d = np.mod(x - lo, 2 * span)
    return lo + np.where(d > span, 2 * span - d, d)


def _grid_taps(coord, size, mode, padding_mode, align_corners):
    """(indices, weights) of shape coord.shape + (taps,) along one spatial axis."""
    if align_corners:
        x = (coord + 1) / 2 * (size - 1)
        lo, hi = 0.0, size - 1.0
    else:
        x = ((coord + 1) * size - 1) / 2
        lo, hi = -0.5, size - 0.5
    if padding_mode == "border":
        if mode != "cubic":  # cubic keeps the point where it is and clamps each tap instead
            x = np.clip(x, 0, size - 1)
    elif padding_mode == "reflection":
        x = _reflect(x, lo, hi)
    elif padding_mode != "zeros":
        raise ValueError(f"GridSample: unknown padding_mode {padding_mode!r}")
    if mode == "nearest":
        index = np.rint(x)[..., None]
        weights = np.ones_like(index)
    else:
        base = np.floor(x)
        offsets = np.arange(2) if mode == "linear" else np.arange(-1, 3)
        index = base[..., None] + offsets
        dist = index - x[..., None]
        weights = np.clip(1 - np.abs(dist), 0, 1) if mode == "linear" else _cubic(dist, -0.75)
    if padding_mode == "zeros":
        weights = np.where((index >= 0) & (index <= size - 1), weights, 0.0)
    elif padding_mode == "reflection":
        index = np.rint(_reflect(index, lo, hi))
    return np.clip(index, 0, size - 1).astype(np.int64), weights


def GridSample(x, grid, *, mode, padding_mode, align_corners):
    if mode not in ("linear", "nearest", "cubic"):
        raise ValueError(f"GridSample: unknown mode {mode!r}")
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    r = len(spatial)
    out_spatial = grid.shape[1:-1]
    points = int(np.prod(out_spatial, dtype=np.int64))
    g = grid.reshape(n, points, r).astype(np.float64)
    compute_dtype = _compute_dtype(x.dtype)
    flat = x.reshape(n, c, -1).astype(compute_dtype, copy=False)
    strides = [int(np.prod(spatial[j + 1 :], dtype=np.int64)) for j in range(r)]
    # grid's last axis lists coordinates innermost first: grid[..., 0] indexes the last axis
    taps = [
        _grid_taps(g[..., r - 1 - j], spatial[j], mode, padding_mode, align_corners)
        for j in range(r)
    ]
    acc = np.zeros((n, c, points), compute_dtype)
    for combo in itertools.product(*(range(t[0].shape[-1]) for t in taps)):
        flat_index = sum(taps[j][0][..., k] * strides[j] for j, k in enumerate(combo))
        weight = np.prod([taps[j][1][..., k] for j, k in enumerate(combo)], axis=0)
        values = np.take_along_axis(flat, flat_index[:, None, :], axis=2)
        acc += values * weight[:, None, :].astype(compute_dtype)
    return _cast_back(acc.reshape((n, c) + tuple(out_spatial)), x.dtype)


def _grid_line(length: int, align_corners: int) -> np.ndarray:
    if align_corners:
        return np.linspace(-1.0, 1.0, length) if length > 1 else np.zeros(length)
    return (2 * np.arange(length, dtype=np.float64) + 1) / length - 1


def AffineGrid(theta, size, *, align_corners):
    dims = [int(v) for v in np.asarray(size).reshape(-1)]
    n, spatial = dims[0], dims[2:]
    lines = [_grid_line(s, align_corners) for s in spatial]
    mesh = np.meshgrid(*lines, indexing="ij")
    # homogeneous points (x, y[, z], 1) with x along the innermost axis
    points = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)], axis=-1)
    grid = np.einsum("pk,nik->npi", points, theta.astype(np.float64))
    return grid.reshape([n] + spatial + [len(spatial)]).astype(theta.dtype)


def CenterCropPad(input_data, shape, *, axes):
    ax = resize_axes(axes, input_data.ndim)
    target = list(input_data.shape)
    for a, s in zip(ax, np.asarray(shape).reshape(-1)):
        target[a] = int(s)
    src, dst = [], []
    for have, want in zip(input_data.shape, target):
        if have >= want:
            start = (have - want) // 2
            src.append(slice(start, start + want))
            dst.append(slice(0, want))
        else:
            start = (want - have) // 2
            src.append(slice(0, have))
            dst.append(slice(start, start + have))
    fill = "" if input_data.dtype == object else 0
    out = np.full(target, fill, dtype=input_data.dtype)
    out[tuple(dst)] = input_data[tuple(src)]
    return out


def _corners(boxes: np.ndarray, center_point_box: int) -> np.ndarray:
    """(..., 4) boxes as (y_min, x_min, y_max, x_max)."""
    b = boxes.astype(np.float64)
    if center_point_box:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)
    return np.stack(
        [
            np.minimum(b[..., 0], b[..., 2]),
            np.minimum(b[..., 1], b[..., 3]),
            np.maximum(b[..., 0], b[..., 2]),
            np.maximum(b[..., 1], b[..., 3]),
        ],
        axis=-1,
    )


def _iou_matrix(c: np.ndarray) -> np.ndarray:
    area = (c[:, 2] - c[:, 0]) * (c[:, 3] - c[:, 1])
    top = np.maximum(c[:, None, 0], c[None, :, 0])
    left = np.maximum(c[:, None, 1], c[None, :, 1])
    bottom = np.minimum(c[:, None, 2], c[None, :, 2])
    right = np.minimum(c[:, None, 3], c[None, :, 3])
    inter = np.clip(bottom - top, 0, None) * np.clip(right - left, 0, None)
    union = area[:, None] + area[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def NonMaxSuppression(
    boxes,
    scores,
    max_output_boxes_per_class=None,
    iou_threshold=None,
    score_threshold=None,
    *,
    center_point_box,
):
    limit = (
        0
        if max_output_boxes_per_class is None
        else int(np.asarray(max_output_boxes_per_class).reshape(-1)[0])
    )
    iou_max = 0.0 if iou_threshold is None else float(np.asarray(iou_threshold).reshape(-1)[0])
    selected = []
    for b in range(scores.shape[0]):
        corners = _corners(boxes[b], center_point_box)
        iou = _iou_matrix(corners)
        for cls in range(scores.shape[1]):
            s = scores[b, cls].astype(np.float64)
            # a stable sort keeps the lower box index first among equal scores
            order = np.argsort(-s, kind="stable")
            if score_threshold is not None:
                order = order[s[order] >= float(np.asarray(score_threshold).reshape(-1)[0])]
            kept = []
            for i in order:
                if len(kept) >= limit:
                    break
                if not kept or not np.any(iou[i, kept] > iou_max):
                    kept.append(i)
            selected.extend((b, cls, i) for i in kept)
    return np.array(selected, dtype=np.int64).reshape(-1, 3)


KERNELS = {
    "Resize": Resize,
    "GridSample": GridSample,
    "AffineGrid": AffineGrid,
    "CenterCropPad": CenterCropPad,
    "NonMaxSuppression": NonMaxSuppression,
}
