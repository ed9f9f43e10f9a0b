# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""MatMulNBits -> kernel "MatMulNBits" (src/cpu/matmul_nbits.cpp on cpu, src/gpu/matmul_nbits.hip
on gpu): f32 A [.., K] times
the block-quantized weight kept packed (B u8, scales f32, zero points u8 packed or f32,
optional f32 bias), dequantized block by block inside the kernel. Refused (the ref target
runs it): a non-f32 A, scales or bias, bits other than 4 / 8, zero points of another type,
dynamic dims."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext
from .lower_support import supports


def _static(value) -> bool:
    dims = value.type.dims
    return dims is not None and all(isinstance(d, int) for d in dims)


def _nbits_ok(node: Node, ctx=None) -> bool:
    a = node.attrs
    if int(a["bits"]) not in (4, 8):
        return False  # 2-bit and other widths: no kernel
    values = [v for v in node.inputs if v is not None] + [node.outputs[0]]
    if not all(v.type is not None and _static(v) for v in values):
        return False  # the kernel sizes itself at compile time
    x, b, scales = node.inputs[:3]
    zero = node.inputs[3] if len(node.inputs) > 3 else None
    bias = node.inputs[4] if len(node.inputs) > 4 else None
    if x.type.dtype != DType.f32 or scales.type.dtype != DType.f32 or b.type.dtype != DType.u8:
        return False  # float16 A / scales: not implemented
    if zero is not None and zero.type.dtype not in (DType.u8, DType.f32):
        return False
    return bias is None or bias.type.dtype == DType.f32


@supports(_nbits_ok)
def lower_matmul_nbits(node: Node, ctx: LoweringContext) -> None:
    ins = [ctx.input(v) for v in node.inputs]
    out = ctx.output(node.outputs[0])
    a = node.attrs
    attrs = {k: int(a[k]) for k in ("K", "N", "bits", "block_size")}
    ctx.emit("MatMulNBits", ins, [out], attrs, node.name)


LOWERINGS = {"MatMulNBits": lower_matmul_nbits}
