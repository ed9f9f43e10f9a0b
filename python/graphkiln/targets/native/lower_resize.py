# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Linear and cubic Resize of float32 data (constant roi / scales / sizes, as a plan per
input shape makes them): one "ResizeAxis" step per resized axis (src/cpu/resize_axis.cpp,
src/gpu/data.hip), each output element a weighted sum of taps along that axis, the taps
and weights from the ref target's own filter code, axes in the ref target's order
(shrinking axes first). Nearest Resize is lower_data.py's (IndexMap)."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from .lower import LoweringContext, static_dims


def resize_steps(node: Node):
    """(input dims, output dims, [(axis, index (out_len, taps), weights (out_len, taps))]),
    or None when this lowering cannot do the node."""
    from ...ir.ops.image import resize_axes, resize_plan
    from ..ref.image import _filter_taps, _source_coordinates

    a = node.attrs
    mode = a.get("coordinate_transformation_mode", "half_pixel")
    if a.get("mode") not in ("linear", "cubic") or mode == "tf_crop_and_resize":
        return None
    x = node.inputs[0]
    if x.type.dtype != DType.f32 or node.outputs[0].type.dtype != DType.f32:
        return None
    if any(v is not None and v.constant is None for v in node.inputs[1:]):
        return None
    dims = static_dims(x)
    rank = len(dims)
    consts = [None if v is None else np.asarray(v.constant) for v in node.inputs[1:4]]
    consts += [None] * (3 - len(consts))
    roi, scales, sizes = [None if c is None or c.size == 0 else c for c in consts]
    out_dims, scale = resize_plan(
        dims, scales, sizes, a.get("axes"), a.get("keep_aspect_ratio_policy", "stretch")
    )
    out_dims = tuple(int(d) for d in out_dims)
    if 0 in dims or 0 in out_dims or out_dims != static_dims(node.outputs[0]):
        return None
    axes = resize_axes(a.get("axes"), rank)
    roi_full = np.array([0.0] * rank + [1.0] * rank)
    if roi is not None:
        r = roi.astype(np.float64).reshape(-1)
        for i, ax in enumerate(axes):
            roi_full[ax], roi_full[rank + ax] = r[i], r[len(axes) + i]
    steps = []
    for ax in sorted(range(rank), key=lambda i: out_dims[i] / max(dims[i], 1)):
        in_len, out_len = dims[ax], out_dims[ax]
        if ax not in axes or (in_len == out_len and scale[ax] == 1):
            continue
        coords = _source_coordinates(
            mode, out_len, in_len, scale[ax], roi_full[ax], roi_full[rank + ax]
        )
        index, weights = _filter_taps(
            coords,
            in_len,
            scale[ax],
            a["mode"],
            a.get("cubic_coeff_a", -0.75),
            a.get("antialias", 0),
            a.get("exclude_outside", 0),
        )
        steps.append((ax, index, weights.astype(np.float32)))
    return dims, out_dims, steps


def resize_taps_ok(node: Node, ctx=None) -> bool:
    try:
        return resize_steps(node) is not None
    except (ValueError, TypeError, KeyError):
        return False


def lower_resize_taps(node: Node, ctx: LoweringContext) -> None:
    dims, out_dims, steps = resize_steps(node)
    cur, cur_dims = ctx.input(node.inputs[0]), list(dims)
    if not steps:
        ctx.emit("Copy", [cur], [ctx.output(node.outputs[0])], {}, node.name)
        return
    prod = lambda xs: int(np.prod(xs, dtype=np.int64))  # noqa: E731
    for k, (ax, index, weights) in enumerate(steps):
        new_dims = list(cur_dims)
        new_dims[ax] = out_dims[ax]
        last = k == len(steps) - 1
        dst = ctx.output(node.outputs[0]) if last else ctx.temp(DType.f32, tuple(new_dims))
        ctx.emit(
            "ResizeAxis",
            [cur],
            [dst],
            {
                "outer": prod(cur_dims[:ax]),
                "in_len": cur_dims[ax],
                "out_len": out_dims[ax],
                "inner": prod(cur_dims[ax + 1 :]),
                "taps": int(index.shape[1]),
                "index": [int(i) for i in index.reshape(-1)],
                "weights": [float(w) for w in weights.reshape(-1)],
            },
            f"{node.name}/axis{ax}",
        )
        cur, cur_dims = dst, new_dims


lower_resize_taps.supports = resize_taps_ok
