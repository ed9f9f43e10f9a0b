# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""GridSample -> kernel "GridSample" (src/cpu/grid_sample.cpp), RoiAlign -> kernel "RoiAlign"
(src/cpu/roi_align.cpp): cpu only, with ref's arithmetic (targets/ref/image.py, pool.py).

GridSample: float32 / float64 data, float32 / float64 grid, 1 to 3 spatial dims, modes
linear / nearest / cubic (opset 16's bilinear / bicubic renamed by the importer), padding
zeros / border / reflection. RoiAlign: float32 / float64 data and rois, int64 / int32 batch
indices, avg / max, half_pixel / output_half_pixel. Other types (float16, integer images)
are refused."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext
from .lower_support import supports

_FLOATS = (DType.f32, DType.f64)


def _grid_sample_ok(node: Node, ctx=None) -> bool:
    x, grid = node.inputs[0], node.inputs[1]
    y = node.outputs[0]
    if x.type.dtype not in _FLOATS or y.type.dtype != x.type.dtype:
        return False
    if grid.type.dtype not in _FLOATS:
        return False
    x_dims, g_dims = x.type.dims, grid.type.dims
    axes = len(x_dims) - 2
    if not 1 <= axes <= 3 or len(g_dims) != axes + 2 or g_dims[-1] != axes:
        return False
    if min(x_dims[2:]) < 1 and all(d > 0 for d in y.type.dims):
        return False  # sampling an empty image
    return (
        node.attrs.get("mode", "linear") in ("linear", "nearest", "cubic")
        and node.attrs.get("padding_mode", "zeros") in ("zeros", "border", "reflection")
        and int(node.attrs.get("align_corners", 0)) in (0, 1)
    )


@supports(_grid_sample_ok)
def lower_grid_sample(node: Node, ctx: LoweringContext) -> None:
    x, grid = node.inputs[0], node.inputs[1]
    attrs = {
        "mode": str(node.attrs.get("mode", "linear")),
        "padding_mode": str(node.attrs.get("padding_mode", "zeros")),
        "align_corners": int(node.attrs.get("align_corners", 0)),
    }
    ctx.emit(
        "GridSample",
        [ctx.input(x), ctx.input(grid)],
        [ctx.output(node.outputs[0])],
        attrs,
        node.name,
    )


def _roi_align_ok(node: Node, ctx=None) -> bool:
    x, rois, batch = node.inputs[:3]
    y = node.outputs[0]
    if x.type.dtype not in _FLOATS or rois.type.dtype != x.type.dtype:
        return False
    if y.type.dtype != x.type.dtype or batch.type.dtype not in (DType.i64, DType.i32):
        return False
    if len(x.type.dims) != 4 or len(rois.type.dims) != 2 or len(batch.type.dims) != 1:
        return False
    if any(d < 1 for d in x.type.dims[2:]) and rois.type.dims[0] > 0:
        return False  # an empty image
    return (
        node.attrs.get("mode", "avg") in ("avg", "max")
        and node.attrs.get("coordinate_transformation_mode", "half_pixel")
        in ("half_pixel", "output_half_pixel")
        and int(node.attrs.get("output_height", 1)) >= 1
        and int(node.attrs.get("output_width", 1)) >= 1
    )


@supports(_roi_align_ok)
def lower_roi_align(node: Node, ctx: LoweringContext) -> None:
    x, rois, batch = node.inputs[:3]
    attrs = {
        "mode": str(node.attrs.get("mode", "avg")),
        "coordinate_transformation_mode": str(
            node.attrs.get("coordinate_transformation_mode", "half_pixel")
        ),
        "output_height": int(node.attrs.get("output_height", 1)),
        "output_width": int(node.attrs.get("output_width", 1)),
        "sampling_ratio": int(node.attrs.get("sampling_ratio", 0)),
        "spatial_scale": float(node.attrs.get("spatial_scale", 1.0)),
    }
    ctx.emit(
        "RoiAlign",
        [ctx.input(x), ctx.input(rois), ctx.input(batch)],
        [ctx.output(node.outputs[0])],
        attrs,
        node.name,
    )


LOWERINGS = {"GridSample": lower_grid_sample, "RoiAlign": lower_roi_align}
