# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Ops the float register program cannot compute exactly, on the gpu target, through the
native layer's shared lowerings (targets/native; same kernel names and attributes;
src/gpu/bytes.hip holds the device kernels):

- Cast between the native types -> Pointwise (lower_pointwise.py); from or to the one-byte
  types (float8, float4, int4, int2) -> CastLookup / CastSteps / CastSubByteInt, with the
  tables the shared lowering (targets/native/lower_cast.py) computes from the ref conversion;
- BitwiseAnd / Or / Xor / Not, BitShift -> Bitwise / BitwiseNot (native lower_bitwise.py);
- QuantizeLinear / DequantizeLinear -> kernels of those names (native lower_quantize.py:
  integer types, float32 scale, per tensor / axis / block); to / from the one-byte types,
  host steps of the cpu's byte kernels (host_steps.py)."""

from __future__ import annotations

from ...ir import Node
from ..native import lower_bitwise as native_bitwise
from ..native import lower_quantize as native_quantize
from ..native.lower import LoweringContext
from ..native.plan import BYTE_DTYPES
from ..native.lower_cast import _byte_plan, emit_byte_cast
from ..native.lower_pointwise import node_supported as pointwise_supported
from .lower_pointwise import lower_pointwise


def _cast_ok(node: Node, ctx=None) -> bool:
    return pointwise_supported(node) or _byte_plan(node) is not None


def lower_cast(node: Node, ctx: LoweringContext) -> None:
    if pointwise_supported(node):
        return lower_pointwise(node, ctx)
    emit_byte_cast(node, ctx)


lower_cast.supports = _cast_ok
lower_cast.byte_dtypes = True

# ops the pointwise table must leave to this module
OWNED = ("Cast", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift")


def _byte_form(node: Node) -> bool:
    """Quantizing to / dequantizing from a one-byte type (float8, float4, int4, int2): the
    kernels QuantizeLinearBytes / DequantizeLinearBytes, which only the cpu side has."""
    value = node.outputs[0] if node.op == "QuantizeLinear" else node.inputs[0]
    return value.type.dtype in BYTE_DTYPES


def _quantize_lowering(op: str):
    native = native_quantize.LOWERINGS[op]

    def lower(node: Node, ctx: LoweringContext) -> None:
        if not _byte_form(node):
            return native(node, ctx)
        with ctx.host_steps("cpu", native_quantize.LOWERINGS):  # host_steps.py
            native(node, ctx)

    lower.supports = native.supports
    lower.byte_dtypes = True
    return lower


LOWERINGS = {
    "Cast": lower_cast,
    **native_bitwise.LOWERINGS,
    "QuantizeLinear": _quantize_lowering("QuantizeLinear"),
    "DequantizeLinear": _quantize_lowering("DequantizeLinear"),
}
