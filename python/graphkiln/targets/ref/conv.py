# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of convolutions: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv, Col2Im,
CausalConvWithState.

Convolutions are im2col (one strided-slice copy of the padded input per kernel tap) then one
batched matmul over the groups, or a multiply-add per tap when depthwise; transposed
convolutions are a matmul followed by a scatter-add per tap. Loops run over the kernel's taps,
never over output pixels."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ...ir.ops.conv import window_geometry


def compute_dtype(dtype) -> np.dtype:
    """float64 stays float64; every other float type is computed in float32."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def pad_spatial(x: np.ndarray, begin, end, value=0) -> np.ndarray:
    if not any(begin) and not any(end):
        return x
    lead = x.ndim - len(begin)
    widths = [(0, 0)] * lead + list(zip(begin, end))
    return np.pad(x, widths, constant_values=value)


def _defaults(n, strides, dilations):
    return tuple(strides or (1,) * n), tuple(dilations or (1,) * n)


def tap_slices(kernel, strides, dilations, out):
    """For each kernel tap: its index tuple and the slices of the padded input it reads."""
    for tap in itertools.product(*(range(k) for k in kernel)):
        yield (
            tap,
            tuple(
                slice(t * d, t * d + (o - 1) * s + 1, s)
                for t, d, s, o in zip(tap, dilations, strides, out)
            ),
        )


def conv_core(x, w, group, strides, dilations, pads, auto_pad, compute):
    """Y (N, M, *out) = grouped correlation of x (N, C, *S) with w (M, C/group, *k), in
    `compute`."""
    n_batch, channels = x.shape[:2]
    kernel = w.shape[2:]
    strides, dilations = _defaults(len(kernel), strides, dilations)
    begin, end, out = window_geometry(
        x.shape[2:], kernel, strides, dilations, pads, auto_pad or "NOTSET"
    )
    xp = pad_spatial(x.astype(compute, copy=False), begin, end)
    per_group, m_total = channels // group, w.shape[0]
    weights = w.astype(compute, copy=False).reshape(group, m_total // group, -1)
    xp = xp.reshape(n_batch, group, per_group, *xp.shape[2:])
    head = (slice(None),) * 3
    if per_group == 1:
        # depthwise: a multiply-add per tap beats a matmul of one-row matrices
        y = np.zeros((n_batch, group, m_total // group, *out), dtype=compute)
        scale_shape = (1, group, m_total // group) + (1,) * len(out)
        for index, (_, where) in enumerate(tap_slices(kernel, strides, dilations, out)):
            y += weights[:, :, index].reshape(scale_shape) * xp[head + where]
        return y.reshape(n_batch, m_total, *out)
    if all(k == 1 for k in kernel) and all(s == 1 for s in strides):
        cols = np.moveaxis(xp, 0, 2)  # a pointwise conv needs no im2col (no copy when N is 1)
    else:
        # im2col, one copy per tap: cols (G, Cg, *k, N, *out) -> matmul over Cg * K
        cols = np.empty((group, per_group, *kernel, n_batch, *out), dtype=compute)
        for tap, where in tap_slices(kernel, strides, dilations, out):
            cols[(slice(None), slice(None)) + tap] = np.moveaxis(xp[head + where], 0, 2)
    cols = cols.reshape(group, per_group * math.prod(kernel), n_batch * math.prod(out))
    y = np.matmul(weights, cols)  # G, Mg, N * P
    y = y.reshape(m_total, n_batch, *out)
    return np.moveaxis(y, 1, 0)


def _add_bias(y, b):
    if b is None:
        return y
    return y + b.astype(y.dtype, copy=False).reshape((-1,) + (1,) * (y.ndim - 2))


def Conv(x, w, b=None, *, auto_pad, dilations, group, kernel_shape, pads, strides):
    compute = compute_dtype(x.dtype)
    y = conv_core(x, w, group, strides, dilations, pads, auto_pad, compute)
    return _add_bias(y, b).astype(x.dtype, copy=False)


def _zero_point_shape(zp, ndim):
    zp = np.asarray(zp, dtype=np.float64)
    return zp.reshape((-1,) + (1,) * (ndim - 1)) if zp.ndim == 1 and zp.size > 1 else zp


def ConvInteger(
    x,
    w,
    x_zero_point=None,
    w_zero_point=None,
    *,
    auto_pad,
    dilations,
    group,
    kernel_shape,
    pads,
    strides,
):
    # Integers are exact in float64 far beyond any realistic accumulation, and BLAS is fast.
    xs = x.astype(np.float64) - (
        0 if x_zero_point is None else np.float64(x_zero_point.reshape(-1)[0])
    )
    ws = w.astype(np.float64) - (
        0 if w_zero_point is None else _zero_point_shape(w_zero_point, w.ndim)
    )
    y = conv_core(xs, ws, group, strides, dilations, pads, auto_pad, np.float64)
    return np.rint(y).astype(np.int64).astype(np.int32)


def QLinearConv(
    x,
    x_scale,
    x_zero_point,
    w,
    w_scale,
    w_zero_point,
    y_scale,
    y_zero_point,
    b=None,
    *,
    auto_pad,
    dilations,
    group,
    kernel_shape,
    pads,
    strides,
):
    xs = x.astype(np.float64) - np.float64(x_zero_point.reshape(-1)[0])
    ws = w.astype(np.float64) - _zero_point_shape(w_zero_point, w.ndim)
    acc = conv_core(xs, ws, group, strides, dilations, pads, auto_pad, np.float64)
    acc = _add_bias(acc, b)
    channel_scale = np.asarray(w_scale, dtype=np.float64).reshape((-1,) + (1,) * (acc.ndim - 2))
    real = acc * (np.float64(x_scale.reshape(-1)[0]) * channel_scale)
    q = np.rint(real / np.float64(y_scale.reshape(-1)[0])) + np.float64(y_zero_point.reshape(-1)[0])
    info = np.iinfo(y_zero_point.dtype)
    return np.clip(q, info.min, info.max).astype(y_zero_point.dtype)


def scatter_taps(cols, kernel, counts, strides, dilations, starts, size):
    """Sum the taps of `cols` (*lead, *kernel, *counts) into a zero buffer (*lead, *size): the
    value of tap t at block position p lands at starts + t * dilations + p * strides."""
    n = len(kernel)
    lead = cols.shape[: cols.ndim - 2 * n]
    buf = np.zeros(tuple(lead) + tuple(size), dtype=cols.dtype)
    head = (slice(None),) * len(lead)
    for tap in itertools.product(*(range(k) for k in kernel)):
        where = tuple(
            slice(
                starts[i] + tap[i] * dilations[i],
                starts[i] + tap[i] * dilations[i] + (counts[i] - 1) * strides[i] + 1,
                strides[i],
            )
            for i in range(n)
        )
        buf[head + where] += cols[head + tap]
    return buf


def transpose_geometry(
    sizes, kernel, strides, dilations, pads, auto_pad, output_padding, output_shape
):
    """Pad-at-begin and output size per axis of a ConvTranspose (pads may come out negative
    when output_shape asks for more than the full result: the extra is zeros)."""
    n = len(sizes)
    extra = tuple(output_padding or (0,) * n)
    begin, out = [], []
    for i, size in enumerate(sizes):
        full = strides[i] * (size - 1) + (kernel[i] - 1) * dilations[i] + 1 + extra[i]
        if output_shape or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            target = output_shape[-n:][i] if output_shape else size * strides[i]
            total = full - target
            half = total // 2
            begin.append(half if auto_pad == "SAME_UPPER" else total - half)
            out.append(target)
        elif auto_pad == "VALID" or not pads:
            begin.append(0)
            out.append(full)
        else:
            begin.append(pads[i])
            out.append(full - pads[i] - pads[i + n])
    return begin, out


def ConvTranspose(
    x,
    w,
    b=None,
    *,
    auto_pad,
    dilations,
    group,
    kernel_shape,
    output_padding,
    output_shape,
    pads,
    strides,
):
    compute = compute_dtype(x.dtype)
    n_batch, channels = x.shape[:2]
    sizes, kernel = x.shape[2:], w.shape[2:]
    n = len(sizes)
    strides, dilations = _defaults(n, strides, dilations)
    begin, out = transpose_geometry(
        sizes, kernel, strides, dilations, pads, auto_pad or "NOTSET", output_padding, output_shape
    )
    per_group, m_per_group = channels // group, w.shape[1]
    taps = m_per_group * math.prod(kernel)
    xs = x.astype(compute, copy=False).reshape(n_batch, group, per_group, -1)
    xs = xs.transpose(1, 2, 0, 3).reshape(group, per_group, -1)
    ws = w.astype(compute, copy=False).reshape(group, per_group, taps).transpose(0, 2, 1)
    cols = np.matmul(ws, xs).reshape(group * m_per_group, *kernel, n_batch, *sizes)
    cols = np.moveaxis(cols, 1 + n, 0)  # N, M, *kernel, *sizes
    full = [strides[i] * (sizes[i] - 1) + (kernel[i] - 1) * dilations[i] + 1 for i in range(n)]
    low = [min(0, begin[i]) for i in range(n)]
    size = [max(full[i], begin[i] + out[i]) - low[i] for i in range(n)]
    buf = scatter_taps(cols, kernel, sizes, strides, dilations, [-v for v in low], size)
    crop = tuple(slice(begin[i] - low[i], begin[i] - low[i] + out[i]) for i in range(n))
    y = buf[(slice(None), slice(None)) + crop]
    return _add_bias(y, b).astype(x.dtype, copy=False)


def Col2Im(x, image_shape, block_shape, *, dilations, pads, strides):
    image = [int(v) for v in image_shape.reshape(-1)]
    block = [int(v) for v in block_shape.reshape(-1)]
    n = len(image)
    strides, dilations = _defaults(n, strides, dilations)
    pads = tuple(pads or (0,) * (2 * n))
    counts = [
        (image[i] + pads[i] + pads[i + n] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1
        for i in range(n)
    ]
    n_batch = x.shape[0]
    compute = compute_dtype(x.dtype)
    cols = x.astype(compute, copy=False).reshape(n_batch, -1, *block, *counts)
    size = [image[i] + pads[i] + pads[i + n] for i in range(n)]
    buf = scatter_taps(cols, block, counts, strides, dilations, [0] * n, size)
    crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(n))
    return buf[(slice(None), slice(None)) + crop].astype(x.dtype, copy=False)


def _bilinear_gather(x, positions):
    """Sample x (N, OG, Cog, *S) at positions (n_axes, N, OG, T) with n-linear interpolation,
    zero outside; returns (N, OG, Cog, T)."""
    sizes = x.shape[3:]
    flat = x.reshape(x.shape[:3] + (-1,))
    floor = np.floor(positions)
    frac = positions - floor
    floor = floor.astype(np.int64)
    result = 0
    for corner in itertools.product((0, 1), repeat=len(sizes)):
        weight = 1.0
        index = 0
        valid = True
        for axis, c in enumerate(corner):
            at = floor[axis] + c
            weight = weight * (frac[axis] if c else 1 - frac[axis])
            valid = valid & (at >= 0) & (at < sizes[axis])
            index = index * sizes[axis] + np.clip(at, 0, sizes[axis] - 1)
        picked = np.take_along_axis(flat, index[:, :, None, :], axis=3)
        result = result + (weight * valid)[:, :, None, :] * picked
    return result


def DeformConv(
    x, w, offset, b=None, mask=None, *, dilations, group, kernel_shape, offset_group, pads, strides
):
    n_batch, channels = x.shape[:2]
    sizes, kernel = x.shape[2:], w.shape[2:]
    n = len(sizes)
    strides, dilations = _defaults(n, strides, dilations)
    begin, _, out = window_geometry(sizes, kernel, strides, dilations, pads)
    taps, pixels = math.prod(kernel), math.prod(out)
    grids = np.meshgrid(
        *(np.arange(k) for k in kernel), *(np.arange(o) for o in out), indexing="ij"
    )
    base = [
        (grids[n + i] * strides[i] - begin[i] + grids[i] * dilations[i]).reshape(taps, pixels)
        for i in range(n)
    ]
    shifts = offset.astype(np.float64).reshape(n_batch, offset_group, taps, n, pixels)
    positions = np.stack([base[i] + shifts[:, :, :, i] for i in range(n)])
    positions = positions.reshape(n, n_batch, offset_group, taps * pixels)
    xs = x.astype(np.float64).reshape(n_batch, offset_group, channels // offset_group, *sizes)
    sampled = _bilinear_gather(xs, positions)  # N, OG, Cog, K * P
    sampled = sampled.reshape(n_batch, offset_group, -1, taps, pixels)
    if mask is not None:
        sampled = sampled * mask.astype(np.float64).reshape(n_batch, offset_group, 1, taps, pixels)
    per_group, m_total = channels // group, w.shape[0]
    cols = sampled.reshape(n_batch, group, per_group * taps, pixels).transpose(1, 2, 0, 3)
    cols = cols.reshape(group, per_group * taps, n_batch * pixels)
    weights = w.astype(np.float64).reshape(group, m_total // group, per_group * taps)
    y = np.moveaxis(np.matmul(weights, cols).reshape(m_total, n_batch, *out), 1, 0)
    return _add_bias(y, b).astype(x.dtype, copy=False)


def CausalConvWithState(x, weight, bias=None, past_state=None, *, activation):
    compute = compute_dtype(x.dtype)
    n_batch, channels, length = x.shape
    k = weight.shape[-1]
    if past_state is None:
        past_state = np.zeros((n_batch, channels, k - 1), dtype=compute)
    sequence = np.concatenate(
        [past_state.astype(compute, copy=False), x.astype(compute, copy=False)], axis=2
    )
    taps = weight.astype(compute, copy=False).reshape(channels, k)
    y = np.zeros((n_batch, channels, length), dtype=compute)
    for j in range(k):
        y += taps[:, j : j + 1] * sequence[:, :, j : j + length]
    if bias is not None:
        y = y + bias.astype(compute, copy=False)[:, None]
    if activation in ("silu", "swish"):
        y = y * (0.5 + 0.5 * np.tanh(0.5 * y))  # y * sigmoid(y), without exp overflow
    elif activation not in ("none", "", None):
        raise ValueError(f"CausalConvWithState: unknown activation {activation!r}")
    state = sequence[:, :, sequence.shape[2] - (k - 1) :]
    return y.astype(x.dtype, copy=False), state.astype(x.dtype, copy=False)


KERNELS = {
    "Conv": Conv,
    "ConvTranspose": ConvTranspose,
    "ConvInteger": ConvInteger,
    "QLinearConv": QLinearConv,
    "DeformConv": DeformConv,
    "Col2Im": Col2Im,
    "CausalConvWithState": CausalConvWithState,
}
