# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Quantization parameters: an activation's scale and zero point from its calibrated range
(uint8 asymmetric, or int8 symmetric), and a weight's int8 values and per-channel (or
per-tensor) scales, symmetric with zero points of 0."""

from __future__ import annotations

import numpy as np


def _positive(scale: np.ndarray) -> np.ndarray:
    """float32 scales, a zero or denormal scale (a constant-zero range) replaced by 1: every
    value then quantizes to the zero point, which is exact for zeros."""
    scale = np.asarray(scale, dtype=np.float32)
    return np.where(scale < np.finfo(np.float32).tiny, np.float32(1.0), scale).astype(np.float32)


def activation_params(low: float, high: float, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    """(scale f32 scalar, zero point scalar: u8, or i8 when symmetric). The range is widened
    to include 0 so that 0 (padding, ReLU's floor) is exact."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    if symmetric:
        scale = _positive(max(-low, high) / 127.0)
        return scale, np.array(0, dtype=np.int8)
    scale = _positive((high - low) / 255.0)
    zero = np.clip(np.round(-low / np.float64(scale)), 0, 255)
    return scale, np.array(zero, dtype=np.uint8)


def weight_params(w: np.ndarray, axis: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int8 values, f32 scales, int8 zero points of 0): symmetric, |q| <= 127, one scale per
    index of `axis` (a 1-D array), or one scalar scale when axis is None."""
    w = np.asarray(w, dtype=np.float32)
    if axis is None:
        scale = _positive(np.abs(w).max(initial=0.0) / 127.0)
        shaped = scale
    else:
        others = tuple(a for a in range(w.ndim) if a != axis)
        scale = _positive(np.abs(w).max(axis=others, initial=0.0) / 127.0)
        shaped = scale.reshape([-1 if a == axis else 1 for a in range(w.ndim)])
    q = np.clip(np.round(w / shaped), -127, 127).astype(np.int8)
    return q, scale, np.zeros(scale.shape, dtype=np.int8)


def bias_params(bias: np.ndarray, x_scale: np.ndarray, w_scale: np.ndarray):
    """(int32 values, f32 scales, int32 zero points of 0) of a Conv / Gemm bias: the scale of
    the op's integer sums, x_scale * w_scale (per output channel, or one, as w_scale; the
    scale QLinearConv reads its bias at), the values rounded to it and clamped to int32.
    None where a product of scales is below float32's normal range (the bias stays float)."""
    scale = (np.float32(x_scale) * np.asarray(w_scale, np.float32)).astype(np.float32)
    if not (scale >= np.finfo(np.float32).tiny).all():
        return None
    info = np.iinfo(np.int32)
    q = np.round(np.asarray(bias, np.float64) / scale.astype(np.float64))
    zero = np.zeros(scale.shape, np.int32)
    return np.clip(q, info.min, info.max).astype(np.int32), scale, zero
