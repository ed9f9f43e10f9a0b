# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Recognize the QDQ form of quantized ops (what onnxruntime's quantize_static and PyTorch's
quantized exports write: every quantized op is DequantizeLinear on its inputs, the float op,
QuantizeLinear on its output) and give the integer op it stands for, so that a target runs
it on int8 kernels instead of dequantizing around a float op:

  Q(Conv(DQ(x), DQ(w), DQ(b)?))   -> QLinearConv(x, ..., w, ..., y_scale, y_zero_point, b?)
  Q(Relu(Conv(...)))              -> the same, when y's zero point is its type's lowest
                                     value (the saturation then is the Relu)
  Q(MaxPool(DQ(x)))               -> MaxPool(x), when Q's scale and zero point are DQ's

Conditions: x and y per tensor (one constant scale and zero point), u8 / i8; w a constant
i8 / u8 quantized per tensor or per output channel (axis 0); the bias a constant int32 of
zero point 0 and scale x_scale * w_scale (how quantizers write it; QLinearConv's meaning).
The float intermediates have no other reader. The integer op rounds its result once where
the float graph rounds the float sum first: results may differ by one unit where a value
lies on a rounding boundary.

Runs first in a target's pipeline (the "start" slot), before constant folding would turn
the dequantized weights into float constants."""

from __future__ import annotations

import numpy as np

from ..ir import DType, Node, Value
from .rewrite import Rewriter, apply_rules

# results may differ by one unit (above): compile(..., verify_passes=True) checks the graph
# this pass leaves, and compares the passes after it with its results
CHANGES_ROUNDING = True

_INT8 = (DType.u8, DType.i8)
_LOWEST = {DType.u8: 0, DType.i8: -128}


def _constant(value: Value | None) -> np.ndarray | None:
    return None if value is None or value.constant is None else np.asarray(value.constant)


def _per_tensor(node: Node) -> bool:
    """A QuantizeLinear / DequantizeLinear of one constant float32 scale and zero point, u8 /
    i8 data, no blocks."""
    if node.attrs.get("block_size") or node.attrs.get("precision") is not None:
        return False
    scale = _constant(node.inputs[1])
    zero = _constant(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else 0
    quantized = node.outputs[0] if node.op == "QuantizeLinear" else node.inputs[0]
    return (
        quantized.type.dtype in _INT8
        and scale is not None
        and scale.size == 1
        and node.inputs[1].type.dtype == DType.f32
        and np.isfinite(scale).all()
        and float(scale.reshape(-1)[0]) > 0
        and zero is not None
        and np.asarray(zero).size == 1
    )


def _dequantized(value: Value) -> Node | None:
    """The per-tensor DequantizeLinear that produced `value`, or None."""
    node = value.producer
    if node is None or node.op != "DequantizeLinear" or not _per_tensor(node):
        return None
    return node if node.outputs[0].type.dtype == DType.f32 else None


def _zero_point(rw: Rewriter, node: Node) -> Value:
    """The node's zero point input, or a constant 0 of its quantized type."""
    if len(node.inputs) > 2 and node.inputs[2] is not None:
        return node.inputs[2]
    dtype = (node.outputs[0] if node.op == "QuantizeLinear" else node.inputs[0]).type.dtype
    return rw.constant(np.zeros((), dtype.numpy), "zero_point")


def _weights(value: Value, maps: int) -> Node | None:
    """The DequantizeLinear of constant i8 / u8 weights, per tensor or per output channel."""
    node = value.producer
    if node is None or node.op != "DequantizeLinear" or node.attrs.get("block_size"):
        return None
    w, scale = _constant(node.inputs[0]), _constant(node.inputs[1])
    zero = node.inputs[2] if len(node.inputs) > 2 else None
    if w is None or scale is None or node.inputs[0].type.dtype not in _INT8:
        return None
    if node.inputs[1].type.dtype != DType.f32 or (zero is not None and zero.constant is None):
        return None
    if scale.size != 1 and not (scale.ndim == 1 and scale.size == maps):
        return None
    if scale.size != 1 and (node.attrs.get("axis", 1) % w.ndim) != 0:
        return None
    return node if np.isfinite(scale).all() and (scale > 0).all() else None


def _bias(value: Value | None, x_scale: float, w_scale: np.ndarray) -> Value | None | bool:
    """The int32 bias of a quantized Conv (None when it has none), or False when the float
    bias is not such a dequantized constant."""
    if value is None:
        return None
    node = value.producer
    if node is None or node.op != "DequantizeLinear":
        return False
    data, scale = _constant(node.inputs[0]), _constant(node.inputs[1])
    zero = _constant(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if data is None or scale is None or node.inputs[0].type.dtype != DType.i32 or data.ndim != 1:
        return False
    if zero is not None and np.any(zero != 0):
        return False
    expected = np.float64(x_scale) * w_scale.astype(np.float64).reshape(-1)
    scale = np.broadcast_to(scale.astype(np.float64).reshape(-1), expected.shape)
    if not np.allclose(scale, expected, rtol=1e-5, atol=0):
        return False
    return node.inputs[0]


def quantized_conv(node: Node, rw: Rewriter):
    """Q(Conv(DQ(x), DQ(w), DQ(b)?)) (a Relu between them when it changes nothing) ->
    QLinearConv."""
    if not _per_tensor(node):
        return None
    y_type = node.outputs[0].type.dtype
    value = node.inputs[0]
    anchor = value.producer
    if anchor is not None and anchor.op == "Relu" and rw.only_user(value) is node:
        zero = _constant(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else 0
        if int(np.asarray(zero).reshape(-1)[0]) != _LOWEST[y_type]:
            return None
        value = anchor.inputs[0]
        reader = anchor
        anchor = value.producer
    else:
        reader = node
    if anchor is None or anchor.op != "Conv" or rw.only_user(value) is not reader:
        return None
    x_dq = _dequantized(anchor.inputs[0])
    maps = anchor.inputs[1].type.dims[0] if anchor.inputs[1].type.dims else None
    w_dq = _weights(anchor.inputs[1], maps) if isinstance(maps, int) else None
    if x_dq is None or w_dq is None:
        return None
    x_scale = float(_constant(x_dq.inputs[1]).reshape(-1)[0])
    bias = _bias(
        anchor.inputs[2] if len(anchor.inputs) > 2 else None, x_scale, _constant(w_dq.inputs[1])
    )
    if bias is False:
        return None
    inputs = [
        x_dq.inputs[0],
        x_dq.inputs[1],
        _zero_point(rw, x_dq),
        w_dq.inputs[0],
        w_dq.inputs[1],
        _zero_point(rw, w_dq),
        node.inputs[1],
        _zero_point(rw, node),
    ]
    if bias is not None:
        inputs.append(bias)
    attrs = {k: v for k, v in anchor.attrs.items() if v is not None}
    return rw.emit_node("QLinearConv", inputs, attrs).outputs[:1]


def quantized_max_pool(node: Node, rw: Rewriter):
    """Q(MaxPool(DQ(x))) with Q's scale and zero point DQ's -> MaxPool(x): the maximum of
    the quantized values is the quantized maximum."""
    if not _per_tensor(node):
        return None
    pool = node.inputs[0].producer
    if pool is None or pool.op != "MaxPool" or rw.only_user(node.inputs[0]) is not node:
        return None
    if len(pool.outputs) > 1 and pool.outputs[1] is not None:
        return None
    dq = _dequantized(pool.inputs[0])
    if dq is None or dq.inputs[0].type.dtype != node.outputs[0].type.dtype:
        return None
    same = [
        np.array_equal(_constant(a), _constant(b))
        for a, b in ((dq.inputs[1], node.inputs[1]), (_zp(dq), _zp(node)))
    ]
    if not all(same):
        return None
    attrs = {k: v for k, v in pool.attrs.items() if v is not None}
    return rw.emit_node("MaxPool", [dq.inputs[0]], attrs, num_outputs=1).outputs[:1]


def _zp(node: Node) -> Value | None:
    return node.inputs[2] if len(node.inputs) > 2 else None


RULES = [("QuantizeLinear", quantized_conv), ("QuantizeLinear", quantized_max_pool)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
