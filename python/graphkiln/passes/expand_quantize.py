# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""QuantizeLinear / DequantizeLinear of one constant scale and zero point -> the pointwise
ops they are made of, so that pointwise fusion merges them with their neighbours (a QDQ
model's residual Add is DQ, DQ, Add, Q: one pass over u8 data instead of four):

  DequantizeLinear(x, s, z) = (Cast(x, f32) - z) * s
  QuantizeLinear(x, s, z)   = Cast(Clip(Round(x / s) + z, lowest, highest), type)

for u8 / i8 data and float32 x, scale and result: the same float32 operations, in the same
order, as the ref target's kernels (the subtraction and the Round are exact; Clip holds the
type's range), so the results are equal. A DequantizeLinear read by several pointwise nodes
is expanded once per reader (each fused chain reads the bytes, not a float copy). Runs
after passes/fold_quantized.py (which needs the DequantizeLinear / QuantizeLinear pairs),
before fusion."""

from __future__ import annotations

import numpy as np

from ..ir import DType, Node, TensorType, Value
from .op_classes import POINTWISE
from .rewrite import Rewriter, apply_rules
from .util import replace_uses

_RANGE = {DType.u8: (0, 255), DType.i8: (-128, 127)}


def _dtype(value: Value | None) -> DType | None:
    t = None if value is None else value.type
    return t.dtype if isinstance(t, TensorType) else None


def _parameters(node: Node, quantized_dtype) -> tuple[float, float] | None:
    """(scale, zero point) of a per-tensor node with constant float32 scale, else None."""
    if node.attrs.get("block_size") or quantized_dtype not in _RANGE:
        return None
    scale_value = node.input(1)
    scale = scale_value.constant
    zero_value = node.inputs[2] if len(node.inputs) > 2 else None
    zero = np.zeros(()) if zero_value is None else zero_value.constant
    if scale is None or zero is None or _dtype(scale_value) != DType.f32:
        return None
    scale, zero = np.asarray(scale), np.asarray(zero)
    if scale.size != 1 or zero.size != 1:
        return None
    return float(scale.reshape(-1)[0]), float(zero.reshape(-1)[0])


def _f32(rw: Rewriter, value: float, name: str):
    return rw.constant(np.array(value, dtype=np.float32), name)


def dequantize(node: Node, rw: Rewriter):
    x = node.inputs[0]
    if _dtype(node.outputs[0]) != DType.f32:
        return None
    params = _parameters(node, _dtype(x))
    if params is None:
        return None
    scale, zero = params
    real = rw.emit("Cast", x, to=DType.f32)
    if zero:
        real = rw.emit("Sub", real, _f32(rw, zero, "dq_zero_point"))
    return [rw.emit("Mul", real, _f32(rw, scale, "dq_scale"))]


def quantize(node: Node, rw: Rewriter):
    x, dtype = node.inputs[0], _dtype(node.outputs[0])
    if _dtype(x) != DType.f32 or node.attrs.get("precision") is not None:
        return None
    params = _parameters(node, dtype)
    if params is None or dtype is None:
        return None
    scale, zero = params
    steps = rw.emit("Round", rw.emit("Div", x, _f32(rw, scale, "q_scale")))
    if zero:
        steps = rw.emit("Add", steps, _f32(rw, zero, "q_zero_point"))
    low, high = _RANGE[dtype]  # dtype is a key: _parameters checked it
    clipped = rw.emit("Clip", steps, _f32(rw, low, "q_lowest"), _f32(rw, high, "q_highest"))
    return [rw.emit("Cast", clipped, to=dtype)]


RULES = [("DequantizeLinear", dequantize), ("QuantizeLinear", quantize)]


def _one_per_reader(graph) -> None:
    """A per-tensor DequantizeLinear read by several nodes gets a copy per pointwise reader,
    so that fusion takes one into each reader's chain: those then read the quantized bytes
    (a QDQ SiLU, DQ(x) * DQ(Q(Sigmoid(DQ(x)))), becomes a function of x alone)."""
    users = graph.users()
    for node in list(graph.nodes):
        if node.op != "DequantizeLinear" or node.outputs[0] in graph.outputs:
            continue
        if _parameters(node, _dtype(node.inputs[0])) is None:
            continue
        readers = users.get(node.outputs[0], [])
        pointwise = [r for r in readers if r.op in POINTWISE]
        if len(readers) < 2 or not pointwise:
            continue
        # the original stays with the other readers (a pooling, a convolution), or with
        # the first pointwise one when there are none
        at = graph.nodes.index(node)
        for reader in pointwise[1:] if len(pointwise) == len(readers) else pointwise:
            copy = graph.add_node(node.op, list(node.inputs), dict(node.attrs), name=node.name)
            graph.nodes.pop()
            graph.nodes.insert(at + 1, copy)
            replace_uses(graph, node.outputs[0], copy.outputs[0], [reader])


def run(graph, ctx) -> None:
    _one_per_reader(graph)
    apply_rules(graph, RULES, ctx)
