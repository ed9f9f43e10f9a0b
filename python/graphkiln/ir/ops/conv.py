# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of convolutions: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv, Col2Im,
CausalConvWithState; and the window geometry (pads, output sizes) that pooling shares."""

from __future__ import annotations

from .. import infer
from ..dtypes import DType
from ..schema import define
from ..types import TensorType, fresh_dim

# Attributes every sliding-window op of the Conv kind carries.
WINDOW_ATTRS = [
    ("auto_pad", "str", "NOTSET"),
    ("dilations", "ints", None),
    ("kernel_shape", "ints", None),
    ("pads", "ints", None),
    ("strides", "ints", None),
]
CONV_ATTRS = WINDOW_ATTRS + [("group", "int", 1)]


def window_geometry(
    sizes, kernel, strides=None, dilations=None, pads=None, auto_pad="NOTSET", ceil_mode=False
):
    """Pads (begin, end) and output sizes of a sliding window over `sizes` (ints).

    The end pads returned are the ones the windows actually reach: with ceil_mode the
    last window may run past the declared end pad (it is then only partly inside)."""
    n = len(sizes)
    strides = tuple(strides or (1,) * n)
    dilations = tuple(dilations or (1,) * n)
    begin, end, out = [], [], []
    for i, size in enumerate(sizes):
        extent = (kernel[i] - 1) * dilations[i] + 1
        s = strides[i]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            count = -(-size // s)
            total = max(0, (count - 1) * s + extent - size)
            small = total // 2
            pb = small if auto_pad == "SAME_UPPER" else total - small
            pe = total - pb
        elif auto_pad == "VALID":
            pb = pe = 0
            count = (size - extent) // s + 1
        else:
            pb, pe = (pads[i], pads[i + n]) if pads else (0, 0)
            span = size + pb + pe - extent
            count = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (count - 1) * s >= size + pb:
                count -= 1  # a window may not start inside the end padding
        count = max(count, 0)
        begin.append(pb)
        end.append(max(pe, (count - 1) * s + extent - size - pb) if count else pe)
        out.append(count)
    return begin, end, out


def spatial_output_dims(x_dims, kernel, attrs, ceil_mode=False):
    """Output spatial dims of a window op for `infer`: ints where known, else fresh symbols."""
    spatial = x_dims[2:]
    if kernel is None or any(not isinstance(k, int) for k in kernel):
        return [fresh_dim() for _ in spatial]
    result = []
    for i, size in enumerate(spatial):
        if not isinstance(size, int):
            result.append(fresh_dim())
            continue
        one = _single_axis(attrs, i, len(spatial))
        _, _, out = window_geometry(
            [size],
            [kernel[i]],
            auto_pad=attrs.get("auto_pad") or "NOTSET",
            ceil_mode=ceil_mode,
            **one,
        )
        result.append(out[0])
    return result


def _single_axis(attrs, i, n):
    pads = attrs.get("pads")
    return {
        "strides": (attrs["strides"][i],) if attrs.get("strides") else None,
        "dilations": (attrs["dilations"][i],) if attrs.get("dilations") else None,
        "pads": (pads[i], pads[i + n]) if pads else None,
    }


def _kernel_of(ctx, w_index=1):
    kernel = ctx.attrs.get("kernel_shape")
    if kernel:
        return list(kernel)
    w = ctx.tensor(w_index).dims
    return None if w is None else list(w[2:])


def _conv_like(dtype_from=0, out_dtype=None, x_index=0, w_index=1):
    def infer_conv(ctx):
        x, w = ctx.tensor(x_index), ctx.tensor(w_index)
        dtype = out_dtype or ctx.tensor(dtype_from).dtype
        rank = x.rank if x.rank is not None else w.rank
        if x.dims is None:
            return [infer.unknown(dtype, rank)]
        channels = w.dims[0] if w.dims is not None else fresh_dim()
        spatial = spatial_output_dims(x.dims, _kernel_of(ctx, w_index), ctx.attrs)
        return [TensorType(dtype, (x.dims[0], channels, *spatial))]

    return infer_conv


def _conv_transpose(ctx):
    x, w = ctx.tensor(0), ctx.tensor(1)
    rank = x.rank if x.rank is not None else w.rank
    if x.dims is None:
        return [infer.unknown(x.dtype, rank)]
    a = ctx.attrs
    group = a["group"]
    channels = (
        w.dims[1] * group if w.dims is not None and isinstance(w.dims[1], int) else fresh_dim()
    )
    spatial_in = x.dims[2:]
    n = len(spatial_in)
    kernel = _kernel_of(ctx)
    if a.get("output_shape"):
        spatial = list(a["output_shape"])[-n:]
    elif kernel is None:
        spatial = [fresh_dim() for _ in range(n)]
    else:
        spatial = []
        for i, size in enumerate(spatial_in):
            if not isinstance(size, int) or not isinstance(kernel[i], int):
                spatial.append(fresh_dim())
                continue
            s = a["strides"][i] if a.get("strides") else 1
            if a["auto_pad"] in ("SAME_UPPER", "SAME_LOWER"):
                spatial.append(size * s)
                continue
            d = a["dilations"][i] if a.get("dilations") else 1
            extra = a["output_padding"][i] if a.get("output_padding") else 0
            pads = a.get("pads") if a["auto_pad"] != "VALID" else None
            pad = pads[i] + pads[i + n] if pads else 0
            spatial.append(s * (size - 1) + extra + (kernel[i] - 1) * d + 1 - pad)
    return [TensorType(x.dtype, (x.dims[0], channels, *spatial))]


def _col2im(ctx):
    x = ctx.tensor(0)
    image, block = ctx.const(1), ctx.const(2)
    n_spatial = ctx.tensor(1).dims[0] if ctx.tensor(1).dims else None
    if image is not None:
        n_spatial = int(image.size)
    if n_spatial is None or not isinstance(n_spatial, int):
        return [infer.unknown(x.dtype, None)]
    batch = x.dims[0] if x.dims is not None else fresh_dim()
    channels: int | str = fresh_dim()
    if x.dims is not None and block is not None and isinstance(x.dims[1], int):
        channels = x.dims[1] // max(1, int(block.prod()))
    spatial = (
        [int(v) for v in image.reshape(-1)]
        if image is not None
        else [fresh_dim() for _ in range(n_spatial)]
    )
    return [TensorType(x.dtype, (batch, channels, *spatial))]


def _causal_conv(ctx):
    x, w = ctx.tensor(0), ctx.tensor(1)
    state_len = w.dims[2] - 1 if w.dims is not None and isinstance(w.dims[2], int) else fresh_dim()
    if x.dims is None:
        return [x, infer.unknown(x.dtype, 3)]
    return [x, TensorType(x.dtype, (x.dims[0], x.dims[1], state_len))]


define("Conv", ("X", "W", "B?"), ("Y",), CONV_ATTRS, _conv_like(), traits=("half_anchor",))
define(
    "ConvTranspose",
    ("X", "W", "B?"),
    ("Y",),
    CONV_ATTRS + [("output_padding", "ints", None), ("output_shape", "ints", None)],
    _conv_transpose,
    traits=("half_anchor",),
)
define(
    "ConvInteger",
    ("x", "w", "x_zero_point?", "w_zero_point?"),
    ("y",),
    CONV_ATTRS,
    _conv_like(out_dtype=DType.i32),
)
define(
    "QLinearConv",
    (
        "x",
        "x_scale",
        "x_zero_point",
        "w",
        "w_scale",
        "w_zero_point",
        "y_scale",
        "y_zero_point",
        "B?",
    ),
    ("y",),
    CONV_ATTRS,
    _conv_like(dtype_from=7, x_index=0, w_index=3),
)
define(
    "DeformConv",
    ("X", "W", "offset", "B?", "mask?"),
    ("Y",),
    [a for a in CONV_ATTRS if a[0] != "auto_pad"] + [("offset_group", "int", 1)],
    _conv_like(),
)
define(
    "Col2Im",
    ("input", "image_shape", "block_shape"),
    ("output",),
    [("dilations", "ints", None), ("pads", "ints", None), ("strides", "ints", None)],
    _col2im,
)
define(
    "CausalConvWithState",
    ("input", "weight", "bias?", "past_state?"),
    ("output", "present_state"),
    [("activation", "str", "none")],
    _causal_conv,
)
