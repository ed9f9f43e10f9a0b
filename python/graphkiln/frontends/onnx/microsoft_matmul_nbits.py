# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importer of onnxruntime's com.microsoft MatMulNBits (weight-only int4 / int8 MatMul, as
the ContribOperators documentation defines it) -> the IR MatMulNBits
(targets/ref/matmul_nbits.py has its semantics). Inputs A, B, scales, zero_points?, g_idx?,
bias?; g_idx (the deprecated act-order permutation) is refused, bits other than 4 and 8 are
refused, accuracy_level (the precision onnxruntime may compute in) is ignored: graphkiln
accumulates in float32."""

from __future__ import annotations

from ...ir import DType
from .context import ImportContext
from .microsoft_common import dims, named, refuse


def _check_attrs(ctx: ImportContext) -> dict:
    a = ctx.attrs
    if "K" not in a or "N" not in a or "block_size" not in a:
        raise refuse(ctx, "MatMulNBits needs its K, N and block_size attributes")
    k, n, bits, block = int(a["K"]), int(a["N"]), int(a.get("bits", 4)), int(a["block_size"])
    if bits not in (4, 8):
        raise refuse(ctx, f"bits={bits}: graphkiln imports 4- and 8-bit MatMulNBits only")
    if block < 16 or block & (block - 1):
        raise refuse(ctx, f"block_size={block}: must be a power of two >= 16")
    if k < 1 or n < 1:
        raise refuse(ctx, f"K={k}, N={n}: must be positive")
    return {"K": k, "N": n, "bits": bits, "block_size": block}


def _check_inputs(ctx: ImportContext, attrs: dict) -> None:
    a_dims = dims(ctx.input(0))
    if ctx.input(0).type is not None and ctx.input(0).type.dtype != DType.f32:
        raise refuse(ctx, f"A of type {ctx.input(0).type.dtype}: float32 A only")
    if a_dims is not None:
        if len(a_dims) < 2 or (isinstance(a_dims[-1], int) and a_dims[-1] != attrs["K"]):
            raise refuse(ctx, f"A of dims {a_dims}: rank >= 2 with last dim K={attrs['K']}")
    k_blocks = -(-attrs["K"] // attrs["block_size"])
    blob = attrs["block_size"] * attrs["bits"] // 8
    b_dims = dims(ctx.input(1))
    if b_dims is not None and tuple(b_dims) != (attrs["N"], k_blocks, blob):
        raise refuse(ctx, f"B of dims {b_dims}: expected {(attrs['N'], k_blocks, blob)}")
    zero = ctx.input(3)
    if zero is not None and zero.type is not None and zero.type.dtype not in (DType.u8, DType.f32):
        raise refuse(ctx, f"zero_points of type {zero.type.dtype}: uint8 or float32 only")
    if ctx.input(4) is not None:
        raise refuse(ctx, "g_idx (the act-order permutation) is not imported")


def matmul_nbits(ctx: ImportContext):
    """MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?; K, N, bits, block_size)."""
    attrs = _check_attrs(ctx)
    _check_inputs(ctx, attrs)
    inputs = [ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(5)]
    while inputs[-1] is None:
        inputs.pop()
    return [named(ctx, "MatMulNBits", inputs, 0, attrs)]


OPS = {"MatMulNBits": matmul_nbits}
