# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importer of onnxruntime's com.microsoft GatherBlockQuantized (a Gather from a table
quantized in blocks along its last axis, as onnxruntime's MatMulNBitsQuantizer writes for
embedding tables): the rows are gathered while still quantized, then dequantized, so that the
program keeps the table in its 4-bit form (never a float32 copy of it).

data is int4 / uint4 (one code per element), or uint8 with bits = 4 (two codes a byte, the
low nibble first); scales float32 [..., blocks]; zero_points, of data's type (packed the same
way for uint8), default 0 (8 for uint8). Refused: gather_axis other than 0 for uint8 data,
quantize_axis other than data's last axis, a last axis that is not whole blocks, bits other
than 4."""

from __future__ import annotations

from ...ir import DType, Value
from .context import ImportContext
from .microsoft_common import cast, dims, ints, named, rank, refuse

_CODES = (DType.i4, DType.u4, DType.u8)


def _unpack_nibbles(ctx: ImportContext, packed: Value) -> Value:
    """uint8 [..., n] holding two 4-bit codes a byte (low nibble first) -> uint8 [..., 2n]."""
    low = ctx.add("BitwiseAnd", packed, ctx.constant(15, dtype="uint8"))
    high = ctx.add("BitShift", packed, ctx.constant(4, dtype="uint8"), direction="RIGHT")
    pairs = ctx.add(
        "Concat",
        ctx.add("Unsqueeze", low, ints(ctx, [-1])),
        ctx.add("Unsqueeze", high, ints(ctx, [-1])),
        axis=-1,
    )
    return ctx.add("Reshape", pairs, ints(ctx, [0] * (rank(packed) - 1) + [-1]))


def _check(ctx: ImportContext) -> tuple[int, int, int]:
    """(gather_axis, block_size, k): the last axis's length in codes."""
    a = ctx.attrs
    data = ctx.input(0)
    data_dims, r = dims(data), rank(data)
    dtype = data.type.dtype if data.type is not None else None
    if dtype not in _CODES:
        raise refuse(ctx, f"data of type {dtype}: int4, uint4 or uint8 (two 4-bit codes a byte)")
    if r is None or not all(isinstance(d, int) for d in data_dims):
        raise refuse(ctx, "data needs static dims (it is a constant table)")
    bits, block = int(a.get("bits", 4)), int(a.get("block_size", 128))
    if bits != 4:
        raise refuse(ctx, f"bits={bits}: 4-bit codes only")
    if block < 16 or block & (block - 1):
        raise refuse(ctx, f"block_size={block}: must be a power of two >= 16")
    gather_axis = int(a.get("gather_axis", 0)) % r
    quantize_axis = int(a.get("quantize_axis", 1)) % r
    if quantize_axis != r - 1:
        raise refuse(ctx, f"quantize_axis={a.get('quantize_axis', 1)}: data's last axis only")
    if dtype == DType.u8 and gather_axis != 0:
        raise refuse(ctx, "uint8 data takes gather_axis 0 only")
    if gather_axis == r - 1:
        raise refuse(ctx, "gather_axis is the quantized axis")
    k = data_dims[-1] * (2 if dtype == DType.u8 else 1)
    if k % block:
        raise refuse(ctx, f"the quantized axis holds {k} codes, not whole blocks of {block}")
    return gather_axis, block, k


def gather_block_quantized(ctx: ImportContext):
    """GatherBlockQuantized(data, indices, scales, zero_points?; gather_axis = 0,
    quantize_axis = 1, block_size = 128, bits = 4): Gather(data, indices, gather_axis)
    dequantized, (code - zero_point) * scale per block of block_size codes along the last
    axis; the output has scales' type (float32)."""
    gather_axis, block, k = _check(ctx)
    data, indices, scales, zero = ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3)
    packed = data.type.dtype == DType.u8
    codes = ctx.add("Gather", data, indices, axis=gather_axis)
    if packed:
        codes = _unpack_nibbles(ctx, codes)
    if rank(indices) is None:
        raise refuse(ctx, "indices need a known rank")
    out_rank = rank(data) - 1 + rank(indices)
    keep = [0] * (out_rank - 1)  # Reshape's 0: the gathered dims, symbolic ones included
    values = ctx.add("Reshape", cast(ctx, codes, DType.f32), ints(ctx, keep + [k // block, block]))
    if zero is not None:
        zeros = ctx.add("Gather", zero, indices, axis=gather_axis)
        if packed:
            zeros = ctx.add(
                "Slice",
                _unpack_nibbles(ctx, zeros),
                ints(ctx, [0]),
                ints(ctx, [k // block]),
                ints(ctx, [-1]),
            )
        values = ctx.add(
            "Sub", values, ctx.add("Unsqueeze", cast(ctx, zeros, DType.f32), ints(ctx, [-1]))
        )
    elif packed:
        values = ctx.add("Sub", values, ctx.constant(8.0, dtype="float32"))
    step = ctx.add(
        "Unsqueeze", ctx.add("Gather", scales, indices, axis=gather_axis), ints(ctx, [-1])
    )
    return [named(ctx, "Reshape", [ctx.add("Mul", values, step), ints(ctx, keep + [k])], 0)]


OPS = {"GatherBlockQuantized": gather_block_quantized}
