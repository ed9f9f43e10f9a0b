# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of pooling: AveragePool, MaxPool, LpPool, Global*Pool, MaxUnpool, MaxRoiPool,
RoiAlign."""

from .. import infer
from ..dtypes import DType
from ..schema import REQUIRED, define
from ..types import TensorType, fresh_dim
from .conv import WINDOW_ATTRS, spatial_output_dims

POOL_ATTRS = [a for a in WINDOW_ATTRS if a[0] != "kernel_shape"] + [
    ("kernel_shape", "ints", REQUIRED),
    ("ceil_mode", "int", 0),
]


def _pool(ctx):
    x = ctx.tensor(0)
    if x.dims is None:
        rank = len(ctx.attrs["kernel_shape"]) + 2
        y = infer.unknown(x.dtype, rank)
    else:
        spatial = spatial_output_dims(
            x.dims,
            list(ctx.attrs["kernel_shape"]),
            ctx.attrs,
            ceil_mode=bool(ctx.attrs["ceil_mode"]),
        )
        y = TensorType(x.dtype, (x.dims[0], x.dims[1], *spatial))
    return [y, TensorType(DType.i64, y.dims)]


def _global_pool(ctx):
    x = ctx.tensor(0)
    if x.dims is None:
        return [x]
    return [TensorType(x.dtype, tuple(x.dims[:2]) + (1,) * (len(x.dims) - 2))]


def _max_unpool(ctx):
    x = ctx.tensor(0)
    shape = ctx.const(2)
    if shape is not None:
        return [TensorType(x.dtype, infer.dims_from_const(shape))]
    if ctx.has(2):
        length = ctx.tensor(2).dims
        rank = length[0] if length and isinstance(length[0], int) else None
        return [infer.unknown(x.dtype, rank)]
    if x.dims is None:
        return [infer.unknown(x.dtype, None)]
    a = ctx.attrs
    kernel, n = a["kernel_shape"], len(x.dims) - 2
    strides = a.get("strides") or (1,) * n
    pads = a.get("pads") or (0,) * (2 * n)
    spatial = [
        (d - 1) * strides[i] + kernel[i] - pads[i] - pads[i + n]
        if isinstance(d, int)
        else fresh_dim()
        for i, d in enumerate(x.dims[2:])
    ]
    return [TensorType(x.dtype, (x.dims[0], x.dims[1], *spatial))]


def _roi(height_width):
    def infer_roi(ctx):
        x, rois = ctx.tensor(0), ctx.tensor(1)
        count = rois.dims[0] if rois.dims is not None else fresh_dim()
        channels = x.dims[1] if x.dims is not None else fresh_dim()
        return [TensorType(x.dtype, (count, channels, *height_width(ctx.attrs)))]

    return infer_roi


define(
    "AveragePool",
    ("X",),
    ("Y",),
    POOL_ATTRS + [("count_include_pad", "int", 0)],
    lambda ctx: _pool(ctx)[:1],
)
define("MaxPool", ("X",), ("Y", "Indices?"), POOL_ATTRS + [("storage_order", "int", 0)], _pool)
define(
    "LpPool",
    ("X",),
    ("Y",),
    POOL_ATTRS + [("p", "int", 2)],
    lambda ctx: _pool(ctx)[:1],
    traits=("half_fp32",),
)
define("GlobalAveragePool", ("X",), ("Y",), (), _global_pool)
define("GlobalMaxPool", ("X",), ("Y",), (), _global_pool)
define("GlobalLpPool", ("X",), ("Y",), [("p", "int", 2)], _global_pool, traits=("half_fp32",))
define(
    "MaxUnpool",
    ("X", "I", "output_shape?"),
    ("output",),
    [("kernel_shape", "ints", REQUIRED), ("pads", "ints", None), ("strides", "ints", None)],
    _max_unpool,
)
define(
    "MaxRoiPool",
    ("X", "rois"),
    ("Y",),
    [("pooled_shape", "ints", REQUIRED), ("spatial_scale", "float", 1.0)],
    _roi(lambda a: tuple(a["pooled_shape"])),
)
define(
    "RoiAlign",
    ("X", "rois", "batch_indices"),
    ("Y",),
    [
        ("coordinate_transformation_mode", "str", "half_pixel"),
        ("mode", "str", "avg"),
        ("output_height", "int", 1),
        ("output_width", "int", 1),
        ("sampling_ratio", "int", 0),
        ("spatial_scale", "float", 1.0),
    ],
    _roi(lambda a: (a["output_height"], a["output_width"])),
)
