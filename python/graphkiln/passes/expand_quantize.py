# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""QuantizeLinear / DequantizeLinear of one constant scale and zero point -> the pointwise
ops they are made of, so that pointwise fusion merges them with their neighbours (a QDQ
model's residual Add is DQ, DQ, Add, Q: one pass over u8 data instead of four):

  DequantizeLinear(x, s, z) = (Cast(x, f32) - z) * s
  QuantizeLinear(x, s, z)   = Cast(Clip(Round(x / s) + z, lowest, highest), type)

for u8 / i8 data and float32 x, scale and result: the same float32 operations, in the same
order, as the ref target's kernels (the subtraction and the Round are exact; Clip holds the
type's range), so the results are equal. Runs after passes/fold_quantized.py (which needs
the DequantizeLinear / QuantizeLinear pairs), before fusion."""

from __future__ import annotations

import numpy as np

from ..ir import DType, Node
from .rewrite import Rewriter, apply_rules

_RANGE = {DType.u8: (0, 255), DType.i8: (-128, 127)}


def _parameters(node: Node, quantized_dtype) -> tuple[float, float] | None:
    """(scale, zero point) of a per-tensor node with constant float32 scale, else None."""
    if node.attrs.get("block_size") or quantized_dtype not in _RANGE:
        return None
    scale_value = node.inputs[1]
    scale = scale_value.constant
    zero_value = node.inputs[2] if len(node.inputs) > 2 else None
    zero = np.zeros(()) if zero_value is None else zero_value.constant
    if scale is None or zero is None or scale_value.type.dtype != DType.f32:
        return None
    scale, zero = np.asarray(scale), np.asarray(zero)
    if scale.size != 1 or zero.size != 1:
        return None
    return float(scale.reshape(-1)[0]), float(zero.reshape(-1)[0])


def _f32(rw: Rewriter, value: float, name: str):
    return rw.constant(np.array(value, dtype=np.float32), name)


def dequantize(node: Node, rw: Rewriter):
    x = node.inputs[0]
    if node.outputs[0].type.dtype != DType.f32:
        return None
    params = _parameters(node, x.type.dtype)
    if params is None:
        return None
    scale, zero = params
    real = rw.emit("Cast", x, to=DType.f32)
    if zero:
        real = rw.emit("Sub", real, _f32(rw, zero, "dq_zero_point"))
    return [rw.emit("Mul", real, _f32(rw, scale, "dq_scale"))]


def quantize(node: Node, rw: Rewriter):
    x, dtype = node.inputs[0], node.outputs[0].type.dtype
    if x.type.dtype != DType.f32 or node.attrs.get("precision") is not None:
        return None
    params = _parameters(node, dtype)
    if params is None:
        return None
    scale, zero = params
    steps = rw.emit("Round", rw.emit("Div", x, _f32(rw, scale, "q_scale")))
    if zero:
        steps = rw.emit("Add", steps, _f32(rw, zero, "q_zero_point"))
    low, high = _RANGE[dtype]
    clipped = rw.emit("Clip", steps, _f32(rw, low, "q_lowest"), _f32(rw, high, "q_highest"))
    return [rw.emit("Cast", clipped, to=dtype)]


RULES = [("DequantizeLinear", dequantize), ("QuantizeLinear", quantize)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
