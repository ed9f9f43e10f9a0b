# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Data movement on the gpu target through the cpu target's lowerings (targets/cpu/
lower_data.py; same kernel names and attributes, src/gpu/data.hip runs them): nearest
Resize and Pad in every mode (IndexMap), CumSum (constant axis), OneHot, Range, ScatterND,
ScatterElements; BitCast (same width: a byte copy); linear / cubic Resize of float32
data, one "ResizeAxis" step per resized axis with taps from the ref target's filter code;
and, through targets/cpu/lower_axis.py, TopK, Hardmax, LpNormalization (src/gpu/axis.hip)
and EyeLike (a constant)."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from ..cpu import lower_axis as cpu_axis
from ..cpu import lower_data as cpu_data
from ..cpu.lower import LoweringContext, static_dims
from .lower_tensor import lower_pad as gpu_pad


def lower_pad(node: Node, ctx: LoweringContext) -> None:
    """Constant padding as fill + copy (lower_tensor.py); other modes through IndexMap."""
    if gpu_pad.supports(node):
        return gpu_pad(node, ctx)
    return cpu_data.lower_pad(node, ctx)


lower_pad.supports = lambda node: gpu_pad.supports(node) or cpu_data.lower_pad.supports(node)


def lower_cumsum(node: Node, ctx: LoweringContext) -> None:
    cpu_data.lower_cumsum(node, ctx)


lower_cumsum.supports = lambda node: (node.inputs[1].constant is not None
                                      and cpu_data.lower_cumsum.supports(node))


def lower_bitcast(node: Node, ctx: LoweringContext) -> None:
    static_dims(node.inputs[0])
    ctx.emit("Copy", [ctx.input(node.inputs[0])], [ctx.output(node.outputs[0])], {}, node.name)


def _bitcast_ok(node: Node) -> bool:
    src, dst = node.inputs[0].type, node.outputs[0].type
    return (src.dtype.numpy is not None and dst.dtype.numpy is not None
            and src.dtype.itemsize == dst.dtype.itemsize and tuple(src.dims) == tuple(dst.dims))


lower_bitcast.supports = _bitcast_ok


def lower_one_hot(node: Node, ctx: LoweringContext) -> None:
    cpu_data.lower_one_hot(node, ctx)


# float indices too (the gpu kernel truncates them, as ref does)
lower_one_hot.supports = lambda node: node.inputs[0].type.dtype in (DType.i32, DType.i64,
                                                                    DType.f32, DType.f64)

def _resize_steps(node: Node):
    """[(axis, index (out_len, taps), weights (out_len, taps))] in the ref target's order
    (shrinking axes first), or None when this lowering cannot do the node."""
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
    out_dims, scale = resize_plan(dims, scales, sizes, a.get("axes"),
                                  a.get("keep_aspect_ratio_policy", "stretch"))
    out_dims = tuple(int(d) for d in out_dims)
    if 0 in dims or 0 in out_dims:
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
        coords = _source_coordinates(mode, out_len, in_len, scale[ax], roi_full[ax],
                                     roi_full[rank + ax])
        index, weights = _filter_taps(coords, in_len, scale[ax], a["mode"],
                                      a.get("cubic_coeff_a", -0.75), a.get("antialias", 0),
                                      a.get("exclude_outside", 0))
        steps.append((ax, index, weights.astype(np.float32)))
    return dims, out_dims, steps


def _resize_taps_ok(node: Node) -> bool:
    try:
        return _resize_steps(node) is not None
    except (ValueError, TypeError, KeyError):
        return False


def lower_resize(node: Node, ctx: LoweringContext) -> None:
    if cpu_data.lower_resize.supports(node):
        return cpu_data.lower_resize(node, ctx)
    dims, out_dims, steps = _resize_steps(node)
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
        ctx.emit("ResizeAxis", [cur], [dst],
                 {"outer": prod(cur_dims[:ax]), "in_len": cur_dims[ax], "out_len": out_dims[ax],
                  "inner": prod(cur_dims[ax + 1:]), "taps": int(index.shape[1]),
                  "index": [int(i) for i in index.reshape(-1)],
                  "weights": [float(w) for w in weights.reshape(-1)]}, f"{node.name}/axis{ax}")
        cur, cur_dims = dst, new_dims


lower_resize.supports = lambda node: cpu_data.lower_resize.supports(node) or _resize_taps_ok(node)

LOWERINGS = {"Resize": lower_resize, "CumSum": lower_cumsum,
             **({"CumProd": lower_cumsum} if "CumProd" in cpu_data.LOWERINGS else {}),
             "OneHot": lower_one_hot, "Range": cpu_data.lower_range,
             "ScatterND": cpu_data.lower_scatter, "ScatterElements": cpu_data.lower_scatter,
             "BitCast": lower_bitcast, "Pad": lower_pad, **cpu_axis.LOWERINGS}
