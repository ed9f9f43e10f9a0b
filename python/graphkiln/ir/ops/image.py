# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of image ops: Resize, GridSample, AffineGrid, CenterCropPad, NonMaxSuppression.

Upsample has no IR op: the importer expresses it as Resize."""

import math

import numpy as np

from .. import infer
from ..dtypes import DType
from ..schema import define
from ..types import TensorType


def resize_axes(axes, rank: int) -> list[int]:
    """The axes that roi/scales/sizes refer to, normalized (all axes when absent)."""
    if axes is None:
        return list(range(rank))
    return [infer.normalize_axis(int(a), rank, "Resize axes") for a in axes]


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def resize_plan(in_dims, scales, sizes, axes, policy: str):
    """(output dims, per-axis scale) of a Resize.

    With `scales`, out = floor(in * scale): the roi does not count, as in ONNX's own shape
    inference and onnxruntime (the operator text multiplies by the roi extent too). With
    `sizes`, the scale is sizes / in, or one common scale for every resized axis under
    keep_aspect_ratio_policy not_larger / not_smaller. For shape inference, a dim may be
    symbolic (str): it stays when its scale is 1, and becomes None where it can't be known."""
    rank = len(in_dims)
    ax = resize_axes(axes, rank)
    out = list(in_dims)
    scale = [1.0] * rank
    if sizes is not None and np.size(sizes) > 0:
        wanted = [int(s) for s in np.asarray(sizes).reshape(-1)]
        if policy == "stretch":
            for a, s in zip(ax, wanted):
                out[a] = s
                known = isinstance(in_dims[a], int) and in_dims[a] > 0
                scale[a] = s / in_dims[a] if known else 1.0
            return out, scale
        if not all(isinstance(in_dims[a], int) for a in ax):
            return [None if i in ax else d for i, d in enumerate(out)], scale
        ratios = [s / in_dims[a] for a, s in zip(ax, wanted) if in_dims[a]]
        common = (min if policy == "not_larger" else max)(ratios) if ratios else 1.0
        for a in ax:
            out[a] = _round_half_up(common * in_dims[a])
            scale[a] = common
        return out, scale
    if scales is None or np.size(scales) == 0:
        raise ValueError("Resize needs one of scales and sizes")
    for a, factor in zip(ax, np.asarray(scales, dtype=np.float32).reshape(-1)):
        scale[a] = float(factor)
        if isinstance(in_dims[a], int):
            out[a] = int(math.floor(in_dims[a] * float(factor)))
        elif scale[a] != 1.0:
            out[a] = None
    return out, scale


def _resize(ctx):
    x = ctx.tensor(0)
    if x.dims is None:
        return [TensorType(x.dtype, None)]
    scales, sizes = ctx.const(2), ctx.const(3)
    ax = resize_axes(ctx.attrs["axes"], len(x.dims))
    if (sizes is not None and sizes.size > 0) or (scales is not None and scales.size > 0):
        out, _ = resize_plan(
            x.dims, scales, sizes, ctx.attrs["axes"], ctx.attrs["keep_aspect_ratio_policy"]
        )
    else:
        out = [None if i in ax else d for i, d in enumerate(x.dims)]
    fresh = infer.fresh_dims(len(x.dims))
    return [TensorType(x.dtype, tuple(f if d is None else d for d, f in zip(out, fresh)))]


define(
    "Resize",
    ("X", "roi?", "scales?", "sizes?"),
    ("Y",),
    [
        ("mode", "str", "nearest"),
        # opset 11's tf_half_pixel_for_nn is kept as a value too (removed from ONNX in opset 13)
        ("coordinate_transformation_mode", "str", "half_pixel"),
        ("nearest_mode", "str", "round_prefer_floor"),
        ("cubic_coeff_a", "float", -0.75),
        ("exclude_outside", "int", 0),
        ("extrapolation_value", "float", 0.0),
        ("antialias", "int", 0),
        ("axes", "ints", None),
        ("keep_aspect_ratio_policy", "str", "stretch"),
    ],
    _resize,
)


def _grid_sample(ctx):
    x, grid = ctx.tensor(0), ctx.tensor(1)
    if grid.dims is None:
        rank = None if x.dims is None else len(x.dims)
        return [infer.unknown(x.dtype, rank)]
    lead = x.dims[:2] if x.dims is not None else infer.fresh_dims(2)
    return [TensorType(x.dtype, tuple(lead) + tuple(grid.dims[1:-1]))]


# mode: linear | nearest | cubic (opset 16's bilinear / bicubic are renamed by the importer)
define(
    "GridSample",
    ("X", "grid"),
    ("Y",),
    [
        ("mode", "str", "linear"),
        ("padding_mode", "str", "zeros"),
        ("align_corners", "int", 0),
    ],
    _grid_sample,
)


def _affine_grid(ctx):
    theta = ctx.tensor(0)
    size = ctx.const(1)
    if size is not None:
        s = [int(v) for v in size.reshape(-1)]
        return [TensorType(theta.dtype, (s[0],) + tuple(s[2:]) + (len(s) - 2,))]
    size_t = ctx.tensor(1)
    if size_t.dims is not None and isinstance(size_t.dims[0], int):
        return [infer.unknown(theta.dtype, size_t.dims[0])]
    return [infer.unknown(theta.dtype, None)]


define("AffineGrid", ("theta", "size"), ("grid",), [("align_corners", "int", 0)], _affine_grid)


def _center_crop_pad(ctx):
    x = ctx.tensor(0)
    shape = ctx.const(1)
    if x.dims is None:
        return [TensorType(x.dtype, None)]
    ax = resize_axes(ctx.attrs["axes"], len(x.dims))
    if shape is None:
        fresh = infer.fresh_dims(len(x.dims))
        return [
            TensorType(x.dtype, tuple(fresh[i] if i in ax else d for i, d in enumerate(x.dims)))
        ]
    dims = list(x.dims)
    for a, s in zip(ax, shape.reshape(-1)):
        dims[a] = int(s)
    return [TensorType(x.dtype, tuple(dims))]


define(
    "CenterCropPad",
    ("input_data", "shape"),
    ("output_data",),
    [("axes", "ints", None)],
    _center_crop_pad,
)

define(
    "NonMaxSuppression",
    ("boxes", "scores", "max_output_boxes_per_class?", "iou_threshold?", "score_threshold?"),
    ("selected_indices",),
    [("center_point_box", "int", 0)],
    lambda ctx: [TensorType(DType.i64, (infer.fresh_dims(1)[0], 3))],
)
