# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Integer bit operations -> kernels "Bitwise" (BitwiseAnd / Or / Xor, BitShift; two
inputs broadcast to the output) and "BitwiseNot" (src/cpu/bitwise.cpp), computed exactly
in the element type."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext
from .lower_support import supports

_INTS = frozenset(
    {DType.i8, DType.i16, DType.i32, DType.i64, DType.u8, DType.u16, DType.u32, DType.u64}
)
_OPS = {"BitwiseAnd": "and", "BitwiseOr": "or", "BitwiseXor": "xor"}


def _same_int(node: Node, ctx=None) -> bool:
    values = [v for v in (*node.inputs, *node.outputs) if v is not None]
    dtypes = {getattr(v.type, "dtype", None) for v in values}
    if len(dtypes) != 1 or not dtypes <= _INTS:
        return False
    if node.op == "BitShift" and node.attrs.get("direction") not in ("LEFT", "RIGHT"):
        return False
    return True


@supports(_same_int)
def lower_bitwise(node: Node, ctx: LoweringContext) -> None:
    if node.op == "BitShift":
        op = "shl" if node.attrs["direction"] == "LEFT" else "shr"
    else:
        op = _OPS[node.op]
    inputs = [ctx.input(v) for v in node.inputs]
    ctx.emit("Bitwise", inputs, [ctx.output(node.outputs[0])], {"op": op}, node.name)


@supports(_same_int)
def lower_bitwise_not(node: Node, ctx: LoweringContext) -> None:
    ctx.emit(
        "BitwiseNot", [ctx.input(node.inputs[0])], [ctx.output(node.outputs[0])], {}, node.name
    )


LOWERINGS = {
    "BitwiseAnd": lower_bitwise,
    "BitwiseOr": lower_bitwise,
    "BitwiseXor": lower_bitwise,
    "BitShift": lower_bitwise,
    "BitwiseNot": lower_bitwise_not,
}
