# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Lowerings of data movement and shape ops.

Most of them are strided copies: the Python side works out, from the slots' strides
(plain or channels-last), one N-d region per input/output pair and emits the C++
"CopyRegions" kernel (src/cpu/copy_regions.cpp): Transpose, Slice, Concat, Split, Expand,
Tile, DepthToSpace, SpaceToDepth. Pad and nearest Resize use "IndexMap" (per-axis
offset tables, src/cpu/index_map.cpp). Gather / GatherElements check their indices at run
time (an index out of range raises, it never reads out of bounds). Shape and Size become
constants; ConstantOfShape a "Fill"; Range, Trilu, CumSum, OneHot, ScatterND and
ScatterElements have small kernels. Views: a Slice / Split / Transpose / Gather (constant
consecutive indices) whose result is a contiguous run of its input's bytes becomes a
zero-copy alias (not for graph outputs).
Slice starts/ends/axes/steps, Pad pads/axes and Resize roi/scales/sizes must be constants (they
are after the plan's specialization folds shape computations); nodes with
them computed at run time are refused (@supports), as are Resize modes other than nearest,
linear and cubic (lower_resize.py: float32 data) and tf_crop_and_resize, Pad with
reflect/edge/wrap of an axis cropped to nothing, and index dtypes other than i32/i64."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from ...ir.ops.indexing import slice_bounds
from ...ir.ops.tensor import shape_range
from .lower import LoweringContext, LoweringError, static_dims
from .lower_support import supports
from .plan import CHANNELS_LAST, PLAIN, itemsize, layout_strides

ANY = (PLAIN, CHANNELS_LAST)


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _ints(value) -> list[int]:
    return [int(v) for v in np.asarray(value.constant).reshape(-1)]


def _is_const(value) -> bool:
    return value is None or value.constant is not None


def _emit_regions(
    ctx: LoweringContext, node: Node, ins: list[int], outs: list[int], regions: list[tuple]
) -> None:
    """regions: (input index, output index, dims, src strides, dst strides, src offset,
    dst offset), strides and offsets in elements."""
    attrs = {"ranks": [], "io": [], "offsets": [], "dims": [], "src_strides": [], "dst_strides": []}
    for i, o, dims, ss, ds, so, do in regions:
        if not dims:  # a scalar: one element
            dims, ss, ds = [1], [1], [1]
        attrs["ranks"].append(len(dims))
        attrs["io"] += [i, o]
        attrs["offsets"] += [int(so), int(do)]
        attrs["dims"] += [int(d) for d in dims]
        attrs["src_strides"] += [int(s) for s in ss]
        attrs["dst_strides"] += [int(s) for s in ds]
    ctx.emit("CopyRegions", ins, outs, attrs, node.name)


def _row_major(dims) -> list[int]:
    out, step = [], 1
    for d in reversed(dims):
        out.append(step)
        step *= d
    return out[::-1]


def _matches(dims, strides, expected) -> bool:
    """Whether the view (dims, strides) has the `expected` strides on its dims of size > 1."""
    return all(s == e for d, s, e in zip(dims, strides, expected) if d != 1)


def _alias(ctx: LoweringContext, value, src: int, dims, strides, offset: int) -> bool:
    """Make `value` a zero-copy view of slot `src` when the view (dims, strides, element
    offset) is the plain layout of `value`, or its channels-last layout where the layout
    analysis chose that (a Transpose (0,3,1,2) of NHWC data); not for graph outputs
    (written into the caller's array)."""
    if ctx.is_graph_output(value) or int(np.prod(dims, dtype=np.int64)) == 0:
        return False
    layouts = ([CHANNELS_LAST] if value in ctx.channels_last else []) + [PLAIN]
    for layout in layouts:
        if _matches(dims, strides, layout_strides(tuple(dims), layout)):
            ctx.alias(value, src, layout=layout, byte_offset=offset * itemsize(ctx.slot(src).dtype))
            return True
    return False


def _copy_or_alias(ctx, node, src: int, dims, strides, offset: int = 0) -> None:
    """Output 0 of `node` is input slot `src` viewed as (dims, strides, offset)."""
    out_v = node.outputs[0]
    if _alias(ctx, out_v, src, dims, strides, offset):
        return
    out = ctx.output(out_v, layouts=ANY)
    _emit_regions(
        ctx,
        node,
        [src],
        [out],
        [(0, 0, list(dims), list(strides), list(ctx.slot(out).strides), offset, 0)],
    )


# -- Transpose -----------------------------------------------------------------------------
def lower_transpose(node: Node, ctx: LoweringContext) -> None:
    rank = len(static_dims(node.inputs[0]))
    perm = node.attrs.get("perm") or list(reversed(range(rank)))
    src = ctx.input(node.inputs[0], layouts=ANY)
    s = ctx.slot(src).strides
    _copy_or_alias(ctx, node, src, static_dims(node.outputs[0]), [s[p] for p in perm])


# -- Slice ---------------------------------------------------------------------------------
def _slice_ok(node: Node, ctx=None) -> bool:
    return all(_is_const(v) for v in node.inputs[1:])


@supports(_slice_ok)
def lower_slice(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    rank = len(dims)
    starts, ends = _ints(node.inputs[1]), _ints(node.inputs[2])
    has = lambda i: len(node.inputs) > i and node.inputs[i] is not None  # noqa: E731
    axes = _ints(node.inputs[3]) if has(3) else list(range(len(starts)))
    steps = _ints(node.inputs[4]) if has(4) else [1] * len(starts)
    begin, step = [0] * rank, [1] * rank
    for start, end, axis, st in zip(starts, ends, axes, steps):
        axis = _axis(axis, rank)
        lo, _, count = slice_bounds(dims[axis], start, end, st)
        begin[axis], step[axis] = (lo if count else 0), st
    src = ctx.input(node.inputs[0], layouts=ANY)
    s = ctx.slot(src).strides
    offset = sum(b * st for b, st in zip(begin, s))
    _copy_or_alias(
        ctx, node, src, static_dims(node.outputs[0]), [a * b for a, b in zip(step, s)], offset
    )


# -- Concat / Split ------------------------------------------------------------------------
def lower_concat(node: Node, ctx: LoweringContext) -> None:
    out_v = node.outputs[0]
    rank = len(static_dims(out_v))
    axis = _axis(node.attrs["axis"], rank)
    values = [v for v in node.inputs if v is not None]
    ins = [ctx.input(v, layouts=ANY) for v in values]
    if len(values) == 1 and not ctx.is_graph_output(out_v):
        ctx.alias(out_v, ins[0])  # a one-input Concat is its input (same layout)
        return
    out = ctx.output(out_v, layouts=ANY)
    ds = ctx.slot(out).strides
    regions, at = [], 0
    for i, (v, slot) in enumerate(zip(values, ins)):
        dims = static_dims(v)
        if int(np.prod(dims, dtype=np.int64)):
            regions.append((i, 0, dims, ctx.slot(slot).strides, ds, 0, at * ds[axis]))
        at += dims[axis]
    _emit_regions(ctx, node, ins, [out], regions)


def lower_split(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    axis = _axis(node.attrs["axis"], len(dims))
    src = ctx.input(node.inputs[0], layouts=ANY)
    s = ctx.slot(src).strides
    outs, regions, at = [], [], 0
    for v in node.outputs:
        if v is None:
            continue
        odims = static_dims(v)
        if not _alias(ctx, v, src, odims, s, at * s[axis]):
            out = ctx.output(v, layouts=ANY)
            if int(np.prod(odims, dtype=np.int64)):
                regions.append((0, len(outs), odims, s, ctx.slot(out).strides, at * s[axis], 0))
            outs.append(out)
        at += odims[axis]
    if outs:
        _emit_regions(ctx, node, [src], outs, regions)


# -- Expand / Tile -------------------------------------------------------------------------
def lower_expand(node: Node, ctx: LoweringContext) -> None:
    idims = static_dims(node.inputs[0])
    odims = static_dims(node.outputs[0])
    src = ctx.input(node.inputs[0], layouts=ANY)
    s = ctx.slot(src).strides
    lead = len(odims) - len(idims)
    strides = [0] * lead + [
        0 if (d == 1 and o != 1) else st for d, o, st in zip(idims, odims[lead:], s)
    ]
    out = ctx.output(node.outputs[0], layouts=ANY)
    _emit_regions(ctx, node, [src], [out], [(0, 0, odims, strides, ctx.slot(out).strides, 0, 0)])


def lower_tile(node: Node, ctx: LoweringContext) -> None:
    idims = static_dims(node.inputs[0])
    odims = static_dims(node.outputs[0])
    src = ctx.input(node.inputs[0], layouts=ANY)
    out = ctx.output(node.outputs[0], layouts=ANY)
    s, o = ctx.slot(src).strides, ctx.slot(out).strides
    dims, ss, ds = [], [], []
    for d, od, st, ost in zip(idims, odims, s, o):
        reps = od // d if d else 0
        dims += [reps, d]
        ss += [0, st]
        ds += [d * ost, ost]
    if int(np.prod(odims, dtype=np.int64)) == 0:
        ctx.emit(
            "CopyRegions",
            [src],
            [out],
            {
                "ranks": [],
                "io": [],
                "offsets": [],
                "dims": [],
                "src_strides": [],
                "dst_strides": [],
            },
            node.name,
        )
        return
    _emit_regions(ctx, node, [src], [out], [(0, 0, dims, ss, ds, 0, 0)])


# -- DepthToSpace / SpaceToDepth -----------------------------------------------------------
def lower_depth_to_space(node: Node, ctx: LoweringContext) -> None:
    n, c, h, w = static_dims(node.inputs[0])
    b = node.attrs["blocksize"]
    cc = c // (b * b)
    src = ctx.input(node.inputs[0], layouts=ANY)
    out = ctx.output(node.outputs[0], layouts=ANY)
    sn, sc, sh, sw = ctx.slot(src).strides
    on, oc, oh, ow = ctx.slot(out).strides
    dims = [n, cc, h, b, w, b]
    if node.attrs["mode"] == "DCR":
        ss = [sn, sc, sh, b * cc * sc, sw, cc * sc]
    else:
        ss = [sn, b * b * sc, sh, b * sc, sw, sc]
    ds = [on, oc, b * oh, oh, b * ow, ow]
    _emit_regions(ctx, node, [src], [out], [(0, 0, dims, ss, ds, 0, 0)])


def lower_space_to_depth(node: Node, ctx: LoweringContext) -> None:
    n, c, h, w = static_dims(node.inputs[0])
    b = node.attrs["blocksize"]
    src = ctx.input(node.inputs[0], layouts=ANY)
    out = ctx.output(node.outputs[0], layouts=ANY)
    sn, sc, sh, sw = ctx.slot(src).strides
    on, oc, oh, ow = ctx.slot(out).strides
    if node.attrs["mode"] == "DCR":
        dims = [n, b, b, c, h // b, w // b]
        ss = [sn, sh, sw, sc, b * sh, b * sw]
        ds = [on, b * c * oc, c * oc, oc, oh, ow]
    else:
        dims = [n, c, b, b, h // b, w // b]
        ss = [sn, sc, sh, sw, b * sh, b * sw]
        ds = [on, b * b * oc, b * oc, oc, oh, ow]
    _emit_regions(ctx, node, [src], [out], [(0, 0, dims, ss, ds, 0, 0)])


# -- Pad -----------------------------------------------------------------------------------
def _pad_ok(node: Node, ctx=None) -> bool:
    if node.attrs.get("mode") not in ("constant", "reflect", "edge", "wrap"):
        return False
    ok = _is_const(node.inputs[1]) and (len(node.inputs) < 4 or _is_const(node.inputs[3]))
    if not ok or node.attrs["mode"] == "constant":
        return ok
    # reflect / edge / wrap of an axis left empty by cropping has no source
    try:
        dims = static_dims(node.inputs[0])
        for (b, e), n in zip(_pad_widths(node, len(dims)), dims):
            if (b > 0 or e > 0) and n - max(-b, 0) - max(-e, 0) <= 0:
                return False
    except LoweringError:
        return False
    return True


def _pad_widths(node: Node, rank: int) -> list[tuple[int, int]]:
    pads = _ints(node.inputs[1])
    has_axes = len(node.inputs) > 3 and node.inputs[3] is not None
    axes = [_axis(a, rank) for a in _ints(node.inputs[3])] if has_axes else list(range(rank))
    widths = [(0, 0)] * rank
    for j, a in enumerate(axes):
        widths[a] = (pads[j], pads[j + len(axes)])
    return widths


def _bits(array, dtype: DType) -> int:
    raw = np.asarray(array).astype(dtype.numpy).reshape(-1)[:1].tobytes()
    return int.from_bytes(raw.ljust(8, b"\0"), "little", signed=True)


@supports(_pad_ok)
def lower_pad(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    mode = node.attrs["mode"]
    src = ctx.input(node.inputs[0], layouts=ANY)
    strides = ctx.slot(src).strides
    maps = []
    for (b, e), n, st in zip(_pad_widths(node, len(dims)), dims, strides):
        lo, hi = max(-b, 0), n - max(-e, 0)
        m = max(hi - lo, 0)
        before, after = max(b, 0), max(e, 0)
        base = np.arange(m, dtype=np.int64) + lo
        if mode == "constant":
            index = np.concatenate([np.full(before, -1), base, np.full(after, -1)])
        elif mode == "wrap":
            index = base[np.arange(-before, m + after) % m] if m else np.zeros(0, np.int64)
        else:
            index = np.pad(base, (before, after), mode=mode)
        maps += [int(i) * st if i >= 0 else -1 for i in index]
    ins = [src]
    attrs = {"maps": maps, "fill_bits": 0}
    dtype = node.inputs[0].type.dtype
    fill = node.inputs[2] if len(node.inputs) > 2 else None
    if mode == "constant" and fill is not None:
        data = fill.constant
        if data is not None:
            if np.asarray(data).size:
                attrs["fill_bits"] = _bits(data, dtype)
        else:
            ins.append(ctx.input(fill))
    ctx.emit("IndexMap", ins, [ctx.output(node.outputs[0])], attrs, node.name)


# -- Gather --------------------------------------------------------------------------------
def _index_ok(node: Node, ctx=None) -> bool:
    return node.inputs[1].type.dtype in (DType.i32, DType.i64)


@supports(_index_ok)
def lower_gather(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    rank = len(dims)
    if node.op == "Gather" and node.inputs[1].constant is not None:
        # constant indices k, k+1, ..., k+n-1 with only size-1 dims before the axis: a view
        axis = _axis(node.attrs["axis"], rank)
        index = np.asarray(node.inputs[1].constant).reshape(-1).astype(np.int64)
        index = np.where(index < 0, index + dims[axis], index)
        if (
            index.size
            and all(d == 1 for d in dims[:axis])
            and np.all(index >= 0)
            and np.all(index < dims[axis])
            and np.all(np.diff(index) == 1)
        ):
            src = ctx.input(node.inputs[0])
            out_dims = static_dims(node.outputs[0])
            st = ctx.slot(src).strides
            if _alias(
                ctx, node.outputs[0], src, out_dims, _row_major(out_dims), int(index[0]) * st[axis]
            ):
                return
    ins = [ctx.input(node.inputs[0]), ctx.input(node.inputs[1])]
    ctx.emit(
        node.op,
        ins,
        [ctx.output(node.outputs[0])],
        {"axis": _axis(node.attrs["axis"], rank)},
        node.name,
    )


# -- shape-like ----------------------------------------------------------------------------
def lower_shape(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    lo, hi = shape_range(len(dims), node.attrs["start"], node.attrs["end"])
    ctx.constant(np.array(dims[lo:hi], dtype=np.int64).reshape(-1), node.outputs[0])


def lower_size(node: Node, ctx: LoweringContext) -> None:
    n = int(np.prod(static_dims(node.inputs[0]), dtype=np.int64))
    ctx.constant(np.array(n, dtype=np.int64), node.outputs[0])


def lower_constant_of_shape(node: Node, ctx: LoweringContext) -> None:
    value = node.attrs.get("value")
    out = node.outputs[0]
    bits = 0 if value is None else _bits(value, out.type.dtype)
    ctx.emit("Fill", [], [ctx.output(out)], {"bits": bits}, node.name)


_RANGE_DTYPES = (DType.f32, DType.f64, DType.i64, DType.i32, DType.i16, DType.i8)


@supports(lambda node, ctx: node.inputs[0].type.dtype in _RANGE_DTYPES)
def lower_range(node: Node, ctx: LoweringContext) -> None:
    ins = [ctx.input(v) for v in node.inputs]
    ctx.emit("Range", ins, [ctx.output(node.outputs[0])], {}, node.name)


def _trilu_ok(node: Node, ctx=None) -> bool:
    k = node.inputs[1] if len(node.inputs) > 1 else None
    return k is None or k.type.dtype == DType.i64


@supports(_trilu_ok)
def lower_trilu(node: Node, ctx: LoweringContext) -> None:
    ins = [ctx.input(v) for v in node.inputs]
    ctx.emit(
        "Trilu", ins, [ctx.output(node.outputs[0])], {"upper": int(node.attrs["upper"])}, node.name
    )


_CUMSUM_DTYPES = (DType.f32, DType.f64, DType.i32, DType.i64, DType.u32, DType.u64)


def _cumsum_ok(node: Node, ctx=None) -> bool:
    return node.inputs[0].type.dtype in _CUMSUM_DTYPES and node.inputs[1].type.dtype in (
        DType.i32,
        DType.i64,
    )


@supports(_cumsum_ok)
def lower_cumsum(node: Node, ctx: LoweringContext) -> None:
    """A constant axis is an attribute; one computed at run time is read by the kernel."""
    rank = len(static_dims(node.inputs[0]))
    attrs = {"exclusive": int(node.attrs["exclusive"]), "reverse": int(node.attrs["reverse"])}
    ins = [ctx.input(node.inputs[0])]
    if node.inputs[1].constant is not None:
        axis = _ints(node.inputs[1])[0]
        if not -max(rank, 1) <= axis < max(rank, 1):
            raise LoweringError(f"CumSum {node.name!r}: axis {axis} out of range")
        attrs["axis"] = axis % max(rank, 1)
    else:
        ins.append(ctx.input(node.inputs[1]))
    if node.op == "CumProd":
        attrs["prod"] = 1
    ctx.emit("CumSum", ins, [ctx.output(node.outputs[0])], attrs, node.name)


# float indices too (both targets' kernels truncate them, as ref does); depth must be a
# constant by then (a graph input is planned on its value: specialize.FLOAT_PARAMETERS)
@supports(
    lambda node, ctx: node.inputs[0].type.dtype in (DType.i32, DType.i64, DType.f32, DType.f64)
)
def lower_one_hot(node: Node, ctx: LoweringContext) -> None:
    rank = len(static_dims(node.outputs[0]))
    ins = [ctx.input(node.inputs[0]), None, ctx.input(node.inputs[2])]
    ctx.emit(
        "OneHot",
        ins,
        [ctx.output(node.outputs[0])],
        {"axis": _axis(node.attrs["axis"], rank)},
        node.name,
    )


# -- Resize (nearest) -----------------------------------------------------------------------
def _resize_ok(node: Node) -> bool:
    return (
        node.attrs.get("mode") == "nearest"
        and node.attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize"
        and all(_is_const(v) for v in node.inputs[1:])
    )


def _resize_any_ok(node: Node, ctx=None) -> bool:
    from .lower_resize import resize_taps_ok

    return _resize_ok(node) or resize_taps_ok(node)


@supports(_resize_any_ok)
def lower_resize(node: Node, ctx: LoweringContext) -> None:
    """Nearest Resize: per axis, a table of source indices (the ref target's own coordinate
    rules), gathered by the IndexMap kernel; linear and cubic: lower_resize.py."""
    from ...ir.ops.image import resize_axes, resize_plan

    if not _resize_ok(node):
        from .lower_resize import lower_resize_taps

        return lower_resize_taps(node, ctx)
    from ..ref.image import _nearest_index, _source_coordinates

    dims = static_dims(node.inputs[0])
    rank = len(dims)
    consts = [None if v is None else np.asarray(v.constant) for v in node.inputs[1:4]]
    consts += [None] * (3 - len(consts))
    roi, scales, sizes = [None if c is None or c.size == 0 else c for c in consts]
    a = node.attrs
    out_dims, scale = resize_plan(
        dims, scales, sizes, a.get("axes"), a.get("keep_aspect_ratio_policy", "stretch")
    )
    if tuple(int(d) for d in out_dims) != static_dims(node.outputs[0]):
        raise LoweringError(f"Resize {node.name!r}: output dims disagree with the plan")
    axes = resize_axes(a.get("axes"), rank)
    roi_full = np.array([0.0] * rank + [1.0] * rank)
    if roi is not None:
        r = roi.astype(np.float64).reshape(-1)
        for i, ax in enumerate(axes):
            roi_full[ax], roi_full[rank + ax] = r[i], r[len(axes) + i]
    src = ctx.input(node.inputs[0], layouts=ANY)
    strides = ctx.slot(src).strides
    mode = a["coordinate_transformation_mode"]
    maps = []
    for ax in range(rank):
        in_len, out_len = dims[ax], int(out_dims[ax])
        shifts = mode == "tf_half_pixel_for_nn"
        if ax not in axes or (in_len == out_len and scale[ax] == 1 and not shifts):
            index = np.arange(out_len)
        elif in_len == 0 or out_len == 0:
            index = np.zeros(out_len, np.int64)
        else:
            coords = _source_coordinates(
                mode, out_len, in_len, scale[ax], roi_full[ax], roi_full[rank + ax]
            )
            index = np.clip(_nearest_index(coords, a["nearest_mode"]), 0, in_len - 1)
        maps += [int(i) * strides[ax] for i in index]
    ctx.emit(
        "IndexMap", [src], [ctx.output(node.outputs[0])], {"maps": maps, "fill_bits": 0}, node.name
    )


# -- ScatterND / ScatterElements -----------------------------------------------------------
_SCATTER_REDUCE_DTYPES = (DType.f32, DType.f64, DType.i32, DType.i64)


def _scatter_ok(node: Node, ctx=None) -> bool:
    if node.inputs[1].type.dtype not in (DType.i32, DType.i64):
        return False
    reduction = node.attrs.get("reduction", "none")
    if reduction not in ("none", "add", "mul", "max", "min"):
        return False
    return reduction == "none" or node.inputs[0].type.dtype in _SCATTER_REDUCE_DTYPES


@supports(_scatter_ok)
def lower_scatter(node: Node, ctx: LoweringContext) -> None:
    attrs = {"reduction": node.attrs.get("reduction", "none")}
    if node.op == "ScatterElements":
        attrs["axis"] = _axis(node.attrs["axis"], len(static_dims(node.inputs[0])))
    ins = [ctx.input(v) for v in node.inputs]
    ctx.emit(node.op, ins, [ctx.output(node.outputs[0])], attrs, node.name)


LOWERINGS = {
    "Transpose": lower_transpose,
    "Slice": lower_slice,
    "Concat": lower_concat,
    "Split": lower_split,
    "Expand": lower_expand,
    "Tile": lower_tile,
    "DepthToSpace": lower_depth_to_space,
    "SpaceToDepth": lower_space_to_depth,
    "Pad": lower_pad,
    "Gather": lower_gather,
    "GatherElements": lower_gather,
    "Shape": lower_shape,
    "Size": lower_size,
    "ConstantOfShape": lower_constant_of_shape,
    "Range": lower_range,
    "Trilu": lower_trilu,
    "CumSum": lower_cumsum,
    "CumProd": lower_cumsum,
    "OneHot": lower_one_hot,
    "Resize": lower_resize,
    "ScatterND": lower_scatter,
    "ScatterElements": lower_scatter,
}
