# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of shape and layout: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
Split, Expand, Tile, Pad, Shape, Size, ..."""

import math
from collections import Counter

from .. import infer
from ...errors import GraphError
from ..dtypes import DType
from ..schema import REQUIRED, define
from ..types import TensorType, fresh_dim


def _ints(array) -> list[int] | None:
    return None if array is None else [int(v) for v in array.reshape(-1)]


def _need_rank(ctx, t: TensorType, low: int, high: int | None = None) -> None:
    """A GraphError unless the rank (when known) is in [low, high] (high None: no bound)."""
    rank = t.rank
    if rank is not None and (rank < low or (high is not None and rank > high)):
        expected = (
            f"at least {low}" if high is None else str(low) if low == high else f"{low}..{high}"
        )
        raise GraphError(f"{ctx.where}: input rank {rank}, expected {expected}")


def _length(t: TensorType) -> int | None:
    """The static length of a 1-D shape-like input, else None."""
    return t.dims[0] if t.dims and isinstance(t.dims[0], int) else None


def _product(dims) -> int | None:
    n = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def _reshape(ctx):
    data = ctx.tensor(0)
    shape = _ints(ctx.const(1))
    if shape is None:
        return [infer.unknown(data.dtype, _length(ctx.tensor(1)))]
    if any(s < -1 for s in shape) or shape.count(-1) > 1:
        raise GraphError(f"{ctx.where}: bad shape {shape} (one -1 at most, no other negatives)")
    allow_zero = ctx.attrs["allowzero"]
    dims = []
    for i, s in enumerate(shape):
        if s == 0 and not allow_zero:
            copied = data.dims is not None and i < len(data.dims)
            dims.append(data.dims[i] if copied else fresh_dim())
        else:
            dims.append(s)
    if -1 in dims:
        inferred = _infer_minus_one(data.dims, [d for d in dims if d != -1])
        if inferred is None:
            raise GraphError(f"{ctx.where}: cannot reshape {data.dims} to {shape}")
        dims = [inferred if d == -1 else d for d in dims]
    return [TensorType(data.dtype, tuple(dims))]


def _infer_minus_one(source, others):
    """The dim a -1 stands for, given the source dims and the other target dims. Symbols that
    appear on both sides cancel, so Reshape([N, 3, 4], [0, -1]) gives 12, not a new symbol.
    None when the sizes cannot match."""
    if source is None:
        return fresh_dim()
    left = Counter(d for d in source if isinstance(d, str))
    for d in others:
        if isinstance(d, str):
            if not left[d]:
                return fresh_dim()
            left[d] -= 1
    total = math.prod(d for d in source if isinstance(d, int))
    known = math.prod(d for d in others if isinstance(d, int))
    if known == 0:
        return fresh_dim() if total == 0 else None
    if total % known:
        return None if not +left else fresh_dim()
    ratio = total // known
    rest = list((+left).elements())
    if not rest:
        return ratio
    return rest[0] if len(rest) == 1 and ratio == 1 else fresh_dim()


def _flatten(ctx):
    data = ctx.tensor(0)
    if data.dims is None:
        return [infer.unknown(data.dtype, 2)]
    rank = len(data.dims)
    axis = ctx.attrs["axis"]
    axis = axis + rank if axis < 0 else axis
    return [TensorType(data.dtype, (_merged(data.dims[:axis]), _merged(data.dims[axis:])))]


def _merged(dims):
    """One dim for several merged into it: their product, the only symbol among 1s, or a new
    symbol."""
    symbols = [d for d in dims if isinstance(d, str)]
    static = _product(d for d in dims if isinstance(d, int))
    if not symbols:
        return static
    return symbols[0] if len(symbols) == 1 and static == 1 else fresh_dim()


def _squeeze(ctx):
    data = ctx.tensor(0)
    axes = _ints(ctx.const(1)) if ctx.has(1) else None
    if data.dims is None:
        return [TensorType(data.dtype, None)]
    rank = len(data.dims)
    if ctx.has(1) and axes is None:
        return [TensorType(data.dtype, None)]
    if axes is None:
        if not all(isinstance(d, int) for d in data.dims):
            return [TensorType(data.dtype, None)]
        return [TensorType(data.dtype, tuple(d for d in data.dims if d != 1))]
    drop = {infer.normalize_axis(a, rank, ctx.where) for a in axes}
    if any(isinstance(data.dims[a], int) and data.dims[a] != 1 for a in drop):
        raise GraphError(f"{ctx.where}: cannot squeeze axes {axes} of {data.dims}")
    return [TensorType(data.dtype, tuple(d for i, d in enumerate(data.dims) if i not in drop))]


def _unsqueeze(ctx):
    data = ctx.tensor(0)
    axes = _ints(ctx.const(1))
    if data.dims is None:
        return [TensorType(data.dtype, None)]
    if axes is None:
        count = _length(ctx.tensor(1))
        return [infer.unknown(data.dtype, None if count is None else len(data.dims) + count)]
    rank = len(data.dims) + len(axes)
    new = {infer.normalize_axis(a, rank, ctx.where) for a in axes}
    if len(new) != len(axes):
        raise GraphError(f"{ctx.where}: repeated axes {axes}")
    rest = iter(data.dims)
    return [TensorType(data.dtype, tuple(1 if i in new else next(rest) for i in range(rank)))]


def _transpose(ctx):
    data = ctx.tensor(0)
    if data.dims is None:
        return [TensorType(data.dtype, None)]
    perm = ctx.attrs["perm"] or tuple(reversed(range(len(data.dims))))
    if sorted(perm) != list(range(len(data.dims))):
        raise GraphError(f"{ctx.where}: perm {perm} is not a permutation of rank {len(data.dims)}")
    return [TensorType(data.dtype, tuple(data.dims[p] for p in perm))]


def _concat(ctx):
    ts = [ctx.tensor(i) for i in range(ctx.num_inputs) if ctx.has(i)]
    known = [t for t in ts if t.dims is not None]
    if not known:
        return [TensorType(ts[0].dtype, None)]
    rank = len(known[0].dims)
    if any(len(t.dims) != rank for t in known):
        raise GraphError(f"{ctx.where}: inputs of different ranks {[t.dims for t in known]}")
    axis = infer.normalize_axis(ctx.attrs["axis"], rank, ctx.where)
    dims = list(known[0].dims)
    for i in range(rank):
        column = [t.dims[i] for t in known]
        if i == axis:
            static = len(known) == len(ts) and all(isinstance(d, int) for d in column)
            dims[i] = sum(column) if static else fresh_dim()
        else:  # the same size in every input: a static one where any input has it
            sizes = [d for d in column if isinstance(d, int)]
            dims[i] = sizes[0] if sizes else dims[i]
    return [TensorType(ts[0].dtype, tuple(dims))]


def _split(ctx):
    data = ctx.tensor(0)
    count = ctx.num_outputs
    if not ctx.has(1) and ctx.attrs["num_outputs"] is None:
        raise GraphError(f"{ctx.where}: Split needs the `split` input or `num_outputs`")
    if data.dims is None:
        return [TensorType(data.dtype, None)] * count
    _need_rank(ctx, data, 1)
    axis = infer.normalize_axis(ctx.attrs["axis"], len(data.dims), ctx.where)
    sizes = _ints(ctx.const(1)) if ctx.has(1) else None
    size = data.dims[axis]
    if sizes is None and not ctx.has(1) and isinstance(size, int):
        chunk = -(-size // count)
        sizes = [min(chunk, max(size - chunk * i, 0)) for i in range(count)]
    out = []
    for i in range(count):
        dims = list(data.dims)
        dims[axis] = sizes[i] if sizes is not None and i < len(sizes) else fresh_dim()
        out.append(TensorType(data.dtype, tuple(dims)))
    return out


def _expand(ctx):
    data = ctx.tensor(0)
    shape = _ints(ctx.const(1))
    if shape is None:
        count = _length(ctx.tensor(1))
        if data.dims is None or count is None:
            return [TensorType(data.dtype, None)]
        return [infer.unknown(data.dtype, max(count, len(data.dims)))]
    return [TensorType(data.dtype, infer.broadcast_dims(data.dims, tuple(shape)))]


def _tile(ctx):
    data = ctx.tensor(0)
    repeats = _ints(ctx.const(1))
    if data.dims is None:
        return [TensorType(data.dtype, None)]
    if repeats is None:
        return [infer.unknown(data.dtype, len(data.dims))]
    if len(repeats) != len(data.dims):
        raise GraphError(f"{ctx.where}: {len(repeats)} repeats for rank {len(data.dims)}")
    dims = [
        d * r if isinstance(d, int) else (d if r == 1 else fresh_dim())
        for d, r in zip(data.dims, repeats)
    ]
    return [TensorType(data.dtype, tuple(dims))]


def _pad(ctx):
    data = ctx.tensor(0)
    pads = _ints(ctx.const(1))
    if data.dims is None:
        return [TensorType(data.dtype, None)]
    rank = len(data.dims)
    given = _ints(ctx.const(3)) if ctx.has(3) else list(range(rank))
    if pads is None or given is None:  # given None: axes is an input, not a constant
        return [infer.unknown(data.dtype, rank)]
    axes = [infer.normalize_axis(a, rank, ctx.where) for a in given]
    if len(pads) != 2 * len(axes):
        raise GraphError(f"{ctx.where}: {len(pads)} pads for {len(axes)} axes")
    dims = list(data.dims)
    for j, a in enumerate(axes):
        extra = pads[j] + pads[j + len(axes)]
        if extra:
            dims[a] = dims[a] + extra if isinstance(dims[a], int) else fresh_dim()
    return [TensorType(data.dtype, tuple(dims))]


def shape_range(rank: int, start: int, end: int | None) -> tuple[int, int]:
    """The [start, end) axes Shape returns, after clamping negative and large bounds."""

    def clamp(i):
        return min(max(i + rank if i < 0 else i, 0), rank)

    return clamp(start), clamp(rank if end is None else end)


def _shape(ctx):
    data = ctx.tensor(0)
    if data.dims is None:
        return [infer.unknown(DType.i64, 1)]
    lo, hi = shape_range(len(data.dims), ctx.attrs["start"], ctx.attrs["end"])
    return [TensorType(DType.i64, (max(hi - lo, 0),))]


def _dropout(ctx):
    data = ctx.tensor(0)
    return [data, TensorType(DType.bool, data.dims)]


def _rearrange_blocks(channel_factor, spatial_factor):
    """Type of DepthToSpace / SpaceToDepth: channels and spatial dims scaled by the block."""

    def infer_blocks(ctx):
        data = ctx.tensor(0)
        if data.dims is None:
            return [infer.unknown(data.dtype, 4)]
        _need_rank(ctx, data, 4, 4)
        b = ctx.attrs["blocksize"]
        n, c, h, w = data.dims

        def scaled(d, factor):
            return factor(d, b) if isinstance(d, int) else fresh_dim()

        return [
            TensorType(
                data.dtype,
                (
                    n,
                    scaled(c, channel_factor),
                    scaled(h, spatial_factor),
                    scaled(w, spatial_factor),
                ),
            )
        ]

    return infer_blocks


_depth_to_space = _rearrange_blocks(lambda d, b: d // (b * b), lambda d, b: d * b)
_space_to_depth = _rearrange_blocks(lambda d, b: d * b * b, lambda d, b: d // b)


define("Identity", ("input",), ("output",), (), infer.same_as(0), traits=("view",))
define(
    "Reshape",
    ("data", "shape"),
    ("reshaped",),
    [("allowzero", "int", 0)],
    _reshape,
    traits=("view",),
)
define("Flatten", ("input",), ("output",), [("axis", "int", 1)], _flatten, traits=("view",))
define("Squeeze", ("data", "axes?"), ("squeezed",), (), _squeeze, traits=("view",))
define("Unsqueeze", ("data", "axes"), ("expanded",), (), _unsqueeze, traits=("view",))
define("Transpose", ("data",), ("transposed",), [("perm", "ints", None)], _transpose)
define("Concat", ("inputs*",), ("concat_result",), [("axis", "int", REQUIRED)], _concat)
define(
    "Split",
    ("input", "split?"),
    ("outputs*",),
    [("axis", "int", 0), ("num_outputs", "int", None)],
    _split,
)
define("Expand", ("input", "shape"), ("output",), (), _expand)
define("Tile", ("input", "repeats"), ("output",), (), _tile)
define(
    "Pad",
    ("data", "pads", "constant_value?", "axes?"),
    ("output",),
    [("mode", "str", "constant")],
    _pad,
)
define("Shape", ("data",), ("shape",), [("start", "int", 0), ("end", "int", None)], _shape)
define("Size", ("data",), ("size",), (), lambda ctx: [TensorType(DType.i64, ())])
# Dropout at inference: output = data, mask = all true (training_mode is honoured by the kernel).
define(
    "Dropout",
    ("data", "ratio?", "training_mode?"),
    ("output", "mask?"),
    [("seed", "int", None)],
    _dropout,
)
define(
    "DepthToSpace",
    ("input",),
    ("output",),
    [("blocksize", "int", REQUIRED), ("mode", "str", "DCR")],
    _depth_to_space,
)
define(
    "SpaceToDepth",
    ("input",),
    ("output",),
    [("blocksize", "int", REQUIRED), ("mode", "str", "DCR")],
    _space_to_depth,
)
