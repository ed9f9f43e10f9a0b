# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Data movement on the gpu target: views share bytes; Transpose, Slice, Concat, Split and
Expand are `StridedCopy` steps (dims, source and destination strides and offsets, in
elements, computed here); Gather has its own kernel."""

from __future__ import annotations

import numpy as np

from ...ir import Node
from ..native.lower import LoweringContext, static_dims
from ..native.lower_basic import LOWERINGS as VIEW_LOWERINGS
from ..native.lower_support import supports
from ..native.lower_pointwise import OP
from ..native.plan import layout_strides, PLAIN


def _strides(dims) -> list[int]:
    return list(layout_strides(tuple(dims), PLAIN))


def emit_copy(
    ctx: LoweringContext,
    src: int,
    dst: int,
    dims,
    src_strides,
    dst_strides,
    src_offset: int = 0,
    dst_offset: int = 0,
    name: str = "",
) -> None:
    if int(np.prod(dims, dtype=np.int64)) == 0:
        return
    ctx.emit(
        "StridedCopy",
        [src],
        [dst],
        {
            "dims": [int(d) for d in dims],
            "src_strides": [int(s) for s in src_strides],
            "dst_strides": [int(s) for s in dst_strides],
            "src_offset": int(src_offset),
            "dst_offset": int(dst_offset),
        },
        name,
    )


def lower_transpose(node: Node, ctx: LoweringContext) -> None:
    src = ctx.input(node.inputs[0])
    dims = static_dims(node.inputs[0])
    perm = node.attrs.get("perm") or list(reversed(range(len(dims))))
    perm = [p % len(dims) for p in perm]
    out = ctx.output(node.outputs[0])
    in_strides = _strides(dims)
    out_dims = [dims[p] for p in perm]
    emit_copy(
        ctx, src, out, out_dims, [in_strides[p] for p in perm], _strides(out_dims), name=node.name
    )


def lower_concat(node: Node, ctx: LoweringContext) -> None:
    out_dims = static_dims(node.outputs[0])
    axis = node.attrs["axis"] % len(out_dims)
    out = ctx.output(node.outputs[0])
    out_strides = _strides(out_dims)
    offset = 0
    for i, v in enumerate(node.inputs):
        if v is None:
            continue
        dims = static_dims(v)
        emit_copy(
            ctx,
            ctx.input(v),
            out,
            dims,
            _strides(dims),
            out_strides,
            dst_offset=offset * out_strides[axis],
            name=f"{node.name}/{i}",
        )
        offset += dims[axis]


def lower_split(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    axis = node.attrs.get("axis", 0) % len(dims)
    src = ctx.input(node.inputs[0])
    strides = _strides(dims)
    offset = 0
    for i, v in enumerate(node.outputs):
        if v is None:
            continue
        out_dims = static_dims(v)
        emit_copy(
            ctx,
            src,
            ctx.output(v),
            out_dims,
            strides,
            _strides(out_dims),
            src_offset=offset * strides[axis],
            name=f"{node.name}/{i}",
        )
        offset += out_dims[axis]


def _constant_ints(node: Node, index: int):
    if index >= len(node.inputs) or node.inputs[index] is None:
        return None
    data = node.inputs[index].constant
    return None if data is None else [int(x) for x in np.asarray(data).reshape(-1)]


def lower_slice(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    starts, ends = _constant_ints(node, 1), _constant_ints(node, 2)
    axes = _constant_ints(node, 3) or list(range(len(starts)))
    steps = _constant_ints(node, 4) or [1] * len(starts)
    strides = _strides(dims)
    src_strides = list(strides)
    offset = 0
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis %= len(dims)
        begin, _, _ = slice(start, end, step).indices(dims[axis])
        offset += begin * strides[axis]
        src_strides[axis] = strides[axis] * step
    out_dims = static_dims(node.outputs[0])
    emit_copy(
        ctx,
        ctx.input(node.inputs[0]),
        ctx.output(node.outputs[0]),
        out_dims,
        src_strides,
        _strides(out_dims),
        src_offset=offset,
        name=node.name,
    )


def _slice_supported(node: Node, ctx=None) -> bool:
    return all(
        i >= len(node.inputs) or node.inputs[i] is None or node.inputs[i].constant is not None
        for i in (1, 2, 3, 4)
    )


lower_slice.supports = _slice_supported


def lower_expand(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    out_dims = static_dims(node.outputs[0])
    strides = _strides(dims)
    shift = len(out_dims) - len(dims)
    src_strides = [
        0 if i < shift or dims[i - shift] == 1 else strides[i - shift] for i in range(len(out_dims))
    ]
    emit_copy(
        ctx,
        ctx.input(node.inputs[0]),
        ctx.output(node.outputs[0]),
        out_dims,
        src_strides,
        _strides(out_dims),
        name=node.name,
    )


def lower_gather(node: Node, ctx: LoweringContext) -> None:
    rank = len(static_dims(node.inputs[0]))
    ctx.emit(
        "Gather",
        [ctx.input(node.inputs[0]), ctx.input(node.inputs[1])],
        [ctx.output(node.outputs[0])],
        {"axis": node.attrs.get("axis", 0) % rank},
        node.name,
    )


def lower_gather_elements(node: Node, ctx: LoweringContext) -> None:
    rank = len(static_dims(node.inputs[0]))
    ctx.emit(
        "GatherElements",
        [ctx.input(node.inputs[0]), ctx.input(node.inputs[1])],
        [ctx.output(node.outputs[0])],
        {"axis": node.attrs.get("axis", 0) % rank},
        node.name,
    )


def lower_trilu(node: Node, ctx: LoweringContext) -> None:
    k = _constant_ints(node, 1)
    ctx.emit(
        "Trilu",
        [ctx.input(node.inputs[0])],
        [ctx.output(node.outputs[0])],
        {"k": k[0] if k else 0, "upper": int(node.attrs.get("upper", 1))},
        node.name,
    )


def fill(ctx: LoweringContext, slot: int, value: float, name: str) -> None:
    """Every element of `slot` = value (a Pointwise program of one constant, in double)."""
    ctx.emit(
        "Pointwise",
        [],
        [slot],
        {
            "program": [OP["Const"], 0, -1, -1, -1],
            "params": [float(value), 0.0],
            "num_regs": 1,
            "result": 0,
            "compute": "f64",
        },
        name,
    )


def lower_pad(node: Node, ctx: LoweringContext) -> None:
    """Constant padding: fill, then copy the kept part of the input (negative pads crop)."""
    dims = static_dims(node.inputs[0])
    out_dims = static_dims(node.outputs[0])
    rank = len(dims)
    pads = _constant_ints(node, 1)
    axes = _constant_ints(node, 3) or list(range(rank))
    begin, end = [0] * rank, [0] * rank
    for j, axis in enumerate(axes):
        begin[axis % rank], end[axis % rank] = pads[j], pads[j + len(axes)]
    value = node.inputs[2].constant if len(node.inputs) > 2 and node.inputs[2] is not None else None
    out = ctx.output(node.outputs[0])
    fill(
        ctx,
        out,
        float(np.asarray(value).reshape(-1)[0])
        if value is not None and np.asarray(value).size
        else 0.0,
        f"{node.name}/fill",
    )
    src_strides, dst_strides = _strides(dims), _strides(out_dims)
    region = [dims[a] - max(0, -begin[a]) - max(0, -end[a]) for a in range(rank)]
    if min(region, default=1) <= 0:
        return
    src_offset = sum(max(0, -begin[a]) * src_strides[a] for a in range(rank))
    dst_offset = sum(max(0, begin[a]) * dst_strides[a] for a in range(rank))
    emit_copy(
        ctx,
        ctx.input(node.inputs[0]),
        out,
        region,
        src_strides,
        dst_strides,
        src_offset,
        dst_offset,
        node.name,
    )


def _pad_ok(node: Node, ctx=None) -> bool:
    return node.attrs.get("mode", "constant") == "constant" and all(
        i >= len(node.inputs) or node.inputs[i] is None or node.inputs[i].constant is not None
        for i in (1, 2, 3)
    )


lower_pad.supports = _pad_ok
lower_trilu.supports = lambda node, ctx: (
    len(node.inputs) < 2 or node.inputs[1] is None or node.inputs[1].constant is not None
)


lower_split.supports = lambda node, ctx: True


def _space_depth_ok(node: Node, ctx=None) -> bool:
    mode = node.attrs.get("mode", "DCR")
    return len(static_dims(node.inputs[0])) == 4 and mode in ("DCR", "CRD")


def _space_depth_strides(node: Node):
    """DepthToSpace / SpaceToDepth as one copy over the rank-6 view [N, C', H, b, W, b] of
    the image side (the output of DepthToSpace, the input of SpaceToDepth), with the strides
    of the channel side: DCR puts the block offset (i, j) above the channel c', CRD below."""
    b = int(node.attrs["blocksize"])
    depth_to_space = node.op == "DepthToSpace"
    n, c, h, w = static_dims(node.inputs[0] if depth_to_space else node.outputs[0])
    cs = c // (b * b)  # the channels of the image side
    chw = h * w
    if node.attrs.get("mode", "DCR") == "CRD":
        channel = {"c": b * b * chw, "i": b * chw, "j": chw}
    else:
        channel = {"c": chw, "i": b * cs * chw, "j": cs * chw}
    view = [n, cs, h, b, w, b]
    channel_strides = [c * chw, channel["c"], w, channel["i"], 1, channel["j"]]
    return view, channel_strides, _strides(view)


@supports(_space_depth_ok)
def lower_depth_to_space(node: Node, ctx: LoweringContext) -> None:
    view, channel_strides, image_strides = _space_depth_strides(node)
    src, out = ctx.input(node.inputs[0]), ctx.output(node.outputs[0])
    if node.op == "DepthToSpace":
        emit_copy(ctx, src, out, view, channel_strides, image_strides, name=node.name)
    else:
        emit_copy(ctx, src, out, view, image_strides, channel_strides, name=node.name)


LOWERINGS = {
    # Reshape, Flatten, Squeeze, Unsqueeze, Identity, BitCast, Dropout (inference): as on cpu
    **VIEW_LOWERINGS,
    "Transpose": lower_transpose,
    "Concat": lower_concat,
    "Split": lower_split,
    "Slice": lower_slice,
    "Expand": lower_expand,
    "Gather": lower_gather,
    "GatherElements": lower_gather_elements,
    "Trilu": lower_trilu,
    "DepthToSpace": lower_depth_to_space,
    "SpaceToDepth": lower_depth_to_space,
}
