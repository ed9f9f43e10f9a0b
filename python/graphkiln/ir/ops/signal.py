# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of signal processing: DFT, STFT, window functions, MelWeightMatrix."""

from .. import infer
from ..dtypes import DType
from ..schema import define
from ..types import TensorType


def _scalar(ctx, i):
    c = ctx.const(i)
    return None if c is None or c.size != 1 else int(c.reshape(-1)[0])


def _dft(ctx):
    x = ctx.tensor(0)
    if x.dims is None:
        return [TensorType(x.dtype, None)]
    rank = len(x.dims)
    dims = list(x.dims)
    inverse, onesided = ctx.attrs["inverse"], ctx.attrs["onesided"]
    axis = _scalar(ctx, 2) if ctx.has(2) else -2
    dims[-1] = 1 if (inverse and onesided) else 2
    if axis is None:
        return [infer.unknown(x.dtype, rank)]
    axis = infer.normalize_axis(axis, rank, ctx.where)
    length = _scalar(ctx, 1) if ctx.has(1) else None
    if length is None and not ctx.has(1) and isinstance(x.dims[axis], int):
        length = 2 * (x.dims[axis] - 1) if (inverse and onesided) else x.dims[axis]
    if length is None:
        dims[axis] = infer.fresh_dims(1)[0]
    else:
        dims[axis] = length // 2 + 1 if (onesided and not inverse) else length
    return [TensorType(x.dtype, tuple(dims))]


# the IR form is opset 20's: axis is an input (default -2, the last signal axis)
define(
    "DFT",
    ("input", "dft_length?", "axis?"),
    ("output",),
    [("inverse", "int", 0), ("onesided", "int", 0)],
    _dft,
)


def _stft(ctx):
    x = ctx.tensor(0)
    batch = x.dims[0] if x.dims is not None else infer.fresh_dims(1)[0]
    length = x.dims[1] if x.dims is not None else None
    step = _scalar(ctx, 1)
    frame = None
    if ctx.has(3):
        frame = _scalar(ctx, 3)
    elif ctx.has(2):
        w = ctx.tensor(2)
        frame = w.dims[0] if w.dims is not None and isinstance(w.dims[0], int) else None
    elif isinstance(length, int):
        frame = length
    fresh = infer.fresh_dims(2)
    frames = fresh[0]
    if isinstance(length, int) and frame is not None and step:
        frames = (length - frame) // step + 1
    bins = fresh[1]
    if frame is not None:
        bins = frame // 2 + 1 if ctx.attrs["onesided"] else frame
    return [TensorType(x.dtype, (batch, frames, bins, 2))]


define(
    "STFT",
    ("signal", "frame_step", "window?", "frame_length?"),
    ("output",),
    [("onesided", "int", 1)],
    _stft,
)


def _window(ctx):
    size = _scalar(ctx, 0)
    return [
        TensorType(
            ctx.attrs["output_datatype"], (size,) if size is not None else infer.fresh_dims(1)
        )
    ]


for _name in ("HannWindow", "HammingWindow", "BlackmanWindow"):
    define(
        _name,
        ("size",),
        ("output",),
        [("periodic", "int", 1), ("output_datatype", "dtype", DType.f32)],
        _window,
    )


def _mel(ctx):
    bins, dft_length = _scalar(ctx, 0), _scalar(ctx, 1)
    fresh = infer.fresh_dims(2)
    return [
        TensorType(
            ctx.attrs["output_datatype"],
            (
                fresh[0] if dft_length is None else dft_length // 2 + 1,
                fresh[1] if bins is None else bins,
            ),
        )
    ]


define(
    "MelWeightMatrix",
    ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"),
    ("output",),
    [("output_datatype", "dtype", DType.f32)],
    _mel,
)
