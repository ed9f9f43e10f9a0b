# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""MatMulInteger on oneDNN's int8 matmul (VNNI / AMX where the CPU has them): the "MatMul"
kernel of src/cpu/matmul.cpp with u8 / i8 A, i8 B and int32 Y. What onnxruntime's
quantize_dynamic writes for every weight of a transformer: DynamicQuantizeLinear(x) ->
MatMulInteger(x_q, W_q, x_zero_point, W_zero_point) -> Cast -> Mul by the scales.

oneDNN takes: A of static dims, B a constant 2-D i8 matrix whose zero point is absent or 0
(symmetric weights: what quantizers write for i8), A's zero point absent, a constant or a
computed value of one element. The int32 sums are exact, as the portable kernel's
(src/cpu/int_matmul.cpp, targets/native/lower_integer.py), which runs the rest."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, TensorType, Value
from ..native.lower import LoweringContext, static_dims
from ..native.lower_integer import lower_matmul_integer, matmul_refusal
from ..native.lower_support import supports
from .int8_isa import onednn_int8_exact
from .lower_matmul import _matmul_views

_INT8 = (DType.u8, DType.i8)


def _dtype(value: Value | None) -> DType | None:
    t = None if value is None else value.type
    return t.dtype if isinstance(t, TensorType) else None


def _input(node: Node, i: int) -> Value | None:
    return node.inputs[i] if i < len(node.inputs) else None


def onednn_eligible(node: Node) -> bool:
    if matmul_refusal(node) is not None or not onednn_int8_exact():
        return False
    a, b, a_zp, b_zp = (_input(node, i) for i in range(4))
    if a is None or b is None or _dtype(a) not in _INT8 or _dtype(b) != DType.i8:
        return False
    if _dtype(node.outputs[0]) != DType.i32 or b.constant is None or len(b.constant.shape) != 2:
        return False
    a_dims = getattr(a.type, "dims", None)
    if not a_dims or len(a_dims) < 2 or not all(isinstance(d, int) for d in a_dims):
        return False
    if b_zp is not None and (b_zp.constant is None or np.any(np.asarray(b_zp.constant) != 0)):
        return False
    if a_zp is not None:
        dims = getattr(a_zp.type, "dims", None)
        if dims is None or int(np.prod(dims, dtype=np.int64)) != 1:
            return False
    return True


@supports(
    lambda node, ctx=None: onednn_eligible(node) or matmul_refusal(node) is None,
)
def lower_qmatmul(node: Node, ctx: LoweringContext) -> None:
    if not onednn_eligible(node):
        lower_matmul_integer(node, ctx)
        return
    a, b = node.inputs[0], node.inputs[1]
    a_zp = _input(node, 2)
    views = _matmul_views(static_dims(a), list(b.constant.shape), collapse=True)
    attrs = views.attrs()
    inputs = [ctx.input(a), ctx.input(b)]
    if a_zp is not None and a_zp.constant is not None:
        attrs["q_src_zp"] = int(np.asarray(a_zp.constant).reshape(-1)[0])
    elif a_zp is not None:
        inputs.append(ctx.input(a_zp))
        attrs["q_src_zp_arg"] = len(inputs) - 1
    ctx.emit("MatMul", inputs, [ctx.output(node.outputs[0])], attrs, node.name)


LOWERINGS = {"MatMulInteger": lower_qmatmul}
