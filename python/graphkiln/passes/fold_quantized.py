# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Recognize the QDQ form of quantized ops (what onnxruntime's quantize_static and PyTorch's
quantized exports write: every quantized op is DequantizeLinear on its inputs, the float op,
QuantizeLinear on its output) and give the integer op it stands for, so that a target runs
it on int8 kernels instead of dequantizing around a float op:

  Q(Conv(DQ(x), DQ(w), DQ(b)?))   -> QLinearConv(x, ..., w, ..., y_scale, y_zero_point, b?)
  Q(Relu(Conv(...)))              -> the same, when y's zero point is its type's lowest
                                     value (the saturation then is the Relu)
  Q(Clip(Conv(...), lo, hi))      -> the same, when moreover lo <= 0 and hi quantizes to
                                     y's highest value (ReLU6: the saturation is the Clip)
  Q(MaxPool(DQ(x)))               -> MaxPool(x), when Q's scale and zero point are DQ's
  MatMul(DQ(a), DQ(w))            -> Cast(MatMulInteger(a, w, a_zero_point), float32)
                                     * (a_scale * w_scale), the scales one value or one
                                     per column of the constant 2-D i8 w (zero point 0);
                                     Gemm likewise, + C
  Gather(DQ(x), i), Reshape(DQ(x)), Transpose, Flatten, Squeeze, Unsqueeze
                                  -> the same op on x, then DQ (exact: the same values)
  Q(DQ(x)) of equal parameters    -> x (exact)
  QLinearMatMul(a, b const i8)    -> Q(Cast(MatMulInteger(a, b, a_zero_point)) * scales)

Conditions: x and y per tensor (one constant scale and zero point), u8 / i8; w a constant
i8 / u8 quantized per tensor or per output channel (axis 0); the bias a constant int32 of
zero point 0 and scale x_scale * w_scale (how quantizers write it; QLinearConv's meaning).
The float intermediates have no other reader. The integer op rounds its result once where
the float graph rounds the float sum first: results may differ by one unit where a value
lies on a rounding boundary (a MatMul's float result, by float32 rounding: its int32 sum is
exact, scaled once).

Runs first in a target's pipeline (the "start" slot), before constant folding would turn
the dequantized weights into float constants."""

from __future__ import annotations

import numpy as np

from ..ir import DType, Node, TensorType, Value
from .rewrite import Rewriter, apply_rules

# results may differ by one unit (above): compile(..., verify_passes=True) checks the graph
# this pass leaves, and compares the passes after it with its results
CHANGES_ROUNDING = True

_INT8 = (DType.u8, DType.i8)
_LOWEST = {DType.u8: 0, DType.i8: -128}
_HIGHEST = {DType.u8: 255, DType.i8: 127}


def _dtype(value: Value | None) -> DType | None:
    t = None if value is None else value.type
    return t.dtype if isinstance(t, TensorType) else None


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
        _dtype(quantized) in _INT8
        and scale is not None
        and scale.size == 1
        and _dtype(node.inputs[1]) == DType.f32
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
    return node if _dtype(node.outputs[0]) == DType.f32 else None


def _zero_point(rw: Rewriter, node: Node) -> Value:
    """The node's zero point input, or a constant 0 of its quantized type."""
    if len(node.inputs) > 2 and node.inputs[2] is not None:
        return node.inputs[2]
    dtype = _dtype(node.output(0) if node.op == "QuantizeLinear" else node.input(0))
    assert dtype is not None  # a per-tensor node of u8 / i8 data (_per_tensor)
    return rw.constant(np.zeros((), dtype.numpy), "zero_point")


def _weights(value: Value, maps: int) -> Node | None:
    """The DequantizeLinear of constant i8 / u8 weights, per tensor or per output channel."""
    node = value.producer
    if node is None or node.op != "DequantizeLinear" or node.attrs.get("block_size"):
        return None
    w, scale = _constant(node.inputs[0]), _constant(node.inputs[1])
    zero = node.inputs[2] if len(node.inputs) > 2 else None
    if w is None or scale is None or _dtype(node.inputs[0]) not in _INT8:
        return None
    if _dtype(node.inputs[1]) != DType.f32 or (zero is not None and zero.constant is None):
        return None
    if scale.size != 1 and not (scale.ndim == 1 and scale.size == maps):
        return None
    if scale.size != 1 and (node.attrs.get("axis", 1) % w.ndim) != 0:
        return None
    return node if np.isfinite(scale).all() and (scale > 0).all() else None


def _bias(value: Value | None, x_scale: float, w_scale: np.ndarray) -> Value | None | bool:
    """The int32 bias of a quantized Conv (None when it has none), or False when the float
    bias is not such a dequantized constant (never True)."""
    if value is None:
        return None
    node = value.producer
    if node is None or node.op != "DequantizeLinear":
        return False
    data, scale = _constant(node.inputs[0]), _constant(node.inputs[1])
    zero = _constant(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if data is None or scale is None or _dtype(node.inputs[0]) != DType.i32 or data.ndim != 1:
        return False
    if zero is not None and np.any(zero != 0):
        return False
    expected = np.float64(x_scale) * w_scale.astype(np.float64).reshape(-1)
    scale = np.broadcast_to(scale.astype(np.float64).reshape(-1), expected.shape)
    if not np.allclose(scale, expected, rtol=1e-5, atol=0):
        return False
    return node.inputs[0]


def _saturation_clamps(act: Node, q: Node) -> bool:
    """Whether Q(act(v)) == Q(v) for every v, act a Relu or a Clip: Q's zero point is its
    type's lowest value (Q saturates every v <= 0 to it, as Relu's 0 would quantize), and a
    Clip's constant bounds change nothing Q keeps: min <= 0 (or none), max (or none)
    quantizing to the type's highest value, so that Q saturates above it as Clip does."""
    y_type = _dtype(q.output(0))
    zero = _constant(_zp(q))
    if y_type is None or y_type not in _LOWEST:
        return False
    lowest = _LOWEST[y_type]
    if (0 if zero is None else int(zero.reshape(-1)[0])) != lowest:
        return False
    if act.op == "Relu":
        return True
    bounds = [act.inputs[i] if len(act.inputs) > i else None for i in (1, 2)]
    low, high = (_constant(b) for b in bounds)
    if any(b is not None and (c is None or c.size != 1) for b, c in zip(bounds, (low, high))):
        return False  # a bound computed at run time
    if low is not None and not float(low.reshape(-1)[0]) <= 0:
        return False
    if high is None:
        return True
    scale = _constant(q.input(1))
    assert scale is not None  # q is per tensor (_per_tensor)
    # QuantizeLinear's arithmetic on the bound: float32 division, rounding half to even
    top = np.rint(np.float32(high.reshape(-1)[0]) / np.float32(scale.reshape(-1)[0]))
    return bool(top + lowest >= _HIGHEST[y_type])


def quantized_conv(node: Node, rw: Rewriter):
    """Q(Conv(DQ(x), DQ(w), DQ(b)?)) (a Relu or Clip between them when it changes nothing)
    -> QLinearConv."""
    if not _per_tensor(node):
        return None
    value = node.input(0)
    anchor, reader = value.producer, node
    if anchor is not None and anchor.op in ("Relu", "Clip") and rw.only_user(value) is node:
        if not _saturation_clamps(anchor, node):
            return None
        value, reader = anchor.input(0), anchor
        anchor = value.producer
    if anchor is None or anchor.op != "Conv" or rw.only_user(value) is not reader:
        return None
    x_dq = _dequantized(anchor.input(0))
    w_dims = getattr(anchor.input(1).type, "dims", None)
    maps = w_dims[0] if w_dims else None
    w_dq = _weights(anchor.input(1), maps) if isinstance(maps, int) else None
    if x_dq is None or w_dq is None:
        return None
    x_scale, w_scale = _constant(x_dq.input(1)), _constant(w_dq.input(1))
    if x_scale is None or w_scale is None:
        return None
    conv_bias = anchor.inputs[2] if len(anchor.inputs) > 2 else None
    bias = _bias(conv_bias, float(x_scale.reshape(-1)[0]), w_scale)
    if bias is False:
        return None
    inputs = [
        x_dq.input(0),
        x_dq.input(1),
        _zero_point(rw, x_dq),
        w_dq.input(0),
        w_dq.input(1),
        _zero_point(rw, w_dq),
        node.input(1),
        _zero_point(rw, node),
    ]
    if isinstance(bias, Value):
        inputs.append(bias)
    attrs = {k: v for k, v in anchor.attrs.items() if v is not None}
    return rw.emit_node("QLinearConv", inputs, attrs).outputs[:1]


def quantized_max_pool(node: Node, rw: Rewriter):
    """Q(MaxPool(DQ(x))) with Q's scale and zero point DQ's -> MaxPool(x): the maximum of
    the quantized values is the quantized maximum."""
    if not _per_tensor(node):
        return None
    pool = node.input(0).producer
    if pool is None or pool.op != "MaxPool" or rw.only_user(node.input(0)) is not node:
        return None
    if len(pool.outputs) > 1 and pool.outputs[1] is not None:
        return None
    dq = _dequantized(pool.input(0))
    if dq is None or _dtype(dq.input(0)) != _dtype(node.output(0)):
        return None
    for a, b in ((dq.input(1), node.input(1)), (_zp(dq), _zp(node))):
        left, right = _constant(a), _constant(b)
        if (left is None) != (right is None) or (
            left is not None and right is not None and not np.array_equal(left, right)
        ):
            return None
    attrs = {k: v for k, v in pool.attrs.items() if v is not None}
    return rw.emit_node("MaxPool", [dq.input(0)], attrs, num_outputs=1).outputs[:1]


def quantized_matmul(node: Node, rw: Rewriter):
    """MatMul(DQ(a), DQ(w)), or Gemm(DQ(a), DQ(w), C?) (alpha 1, A not transposed), with w
    constant i8 of zero point 0 -> the int32 product scaled in float32 (plus C)."""
    gemm = node.op == "Gemm"
    if gemm and (node.attrs.get("transA") or node.attrs.get("alpha", 1.0) != 1.0):
        return None
    a_dq = _dequantized(node.input(0))
    w_dq = node.input(1).producer
    if a_dq is None or w_dq is None or w_dq.op != "DequantizeLinear":
        return None
    w, w_scale = _constant(w_dq.input(0)), _constant(w_dq.input(1))
    if w is None or w_scale is None or w.ndim != 2 or _dtype(w_dq.input(0)) != DType.i8:
        return None
    w_zero = _constant(_zp(w_dq))
    if (_zp(w_dq) is not None and w_zero is None) or (w_zero is not None and np.any(w_zero)):
        return None
    if w_dq.attrs.get("block_size") or _dtype(w_dq.input(1)) != DType.f32:
        return None
    transposed = gemm and bool(node.attrs.get("transB"))
    column_axis = 0 if transposed else 1  # the axis of w along N
    columns = w.shape[column_axis]
    if w_scale.size != 1 and (
        w_scale.shape != (columns,) or w_dq.attrs.get("axis", 1) % 2 != column_axis
    ):
        return None
    a_scale = _constant(a_dq.input(1))
    if a_scale is None or not (np.isfinite(w_scale).all() and (w_scale > 0).all()):
        return None
    c = node.inputs[2] if gemm and len(node.inputs) > 2 else None
    if c is not None and node.attrs.get("beta", 1.0) != 1.0:
        return None
    weights = rw.constant(np.ascontiguousarray(w.T), "weights_t") if transposed else w_dq.input(0)
    scale = (np.float32(a_scale.reshape(-1)[0]) * w_scale.astype(np.float32)).astype(np.float32)
    product = rw.emit("MatMulInteger", a_dq.input(0), weights, _zero_point(rw, a_dq))
    real = rw.emit("Cast", product, to=DType.f32)
    result = rw.emit("Mul", real, rw.constant(scale.reshape(-1), "matmul_scale"))
    return [result if c is None else rw.emit("Add", result, c)]


def qlinear_matmul(node: Node, rw: Rewriter):
    """QLinearMatMul(a, ..., b, ..., y_scale, y_zero_point) with b a constant 2-D i8 matrix
    of zero point 0 and per-tensor a -> Q(Cast(MatMulInteger(a, b, a_zero_point)) * (a_scale
    * b_scale)): the product on the int8 matmul kernels, the requantization fused with what
    follows (QOperator models, as quantize_static writes them)."""
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = node.inputs[:8]
    w, ws, as_ = _constant(b), _constant(b_scale), _constant(a_scale)
    if a is None or w is None or ws is None or as_ is None or w.ndim != 2 or as_.size != 1:
        return None
    if _dtype(b) != DType.i8 or _dtype(a) not in _INT8 or y_scale is None:
        return None
    zero = _constant(b_zero)
    if (b_zero is not None and zero is None) or (zero is not None and np.any(zero)):
        return None
    a_zero_value = _constant(a_zero)
    if a_zero is not None and (a_zero_value is None or a_zero_value.size != 1):
        return None
    if ws.size != 1 and ws.shape != (w.shape[1],):
        return None
    if _dtype(b_scale) != DType.f32 or _dtype(a_scale) != DType.f32:
        return None
    scale = (np.float32(as_.reshape(-1)[0]) * ws.astype(np.float32)).astype(np.float32)
    a_type = _dtype(a)
    assert a_type is not None  # checked above: u8 / i8
    zero_a = a_zero if a_zero is not None else rw.constant(np.zeros((), a_type.numpy), "zp")
    product = rw.emit("MatMulInteger", a, b, zero_a)
    real = rw.emit(
        "Mul", rw.emit("Cast", product, to=DType.f32), rw.constant(scale.reshape(-1), "scale")
    )
    return [rw.emit("QuantizeLinear", real, y_scale, y_zero)]


# ops that only move or pick elements: a per-tensor DequantizeLinear commutes with them
_MOVES = frozenset({"Gather", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"})


def dequantized_move(node: Node, rw: Rewriter):
    """Move(DQ(x), ...) -> DQ(Move(x, ...)) for a per-tensor DQ and an op that only moves
    or picks elements (exact: the same values). An embedding table stays quantized and only
    the rows read are dequantized; a reshape between two quantized ops leaves the bytes
    for the QuantizeLinear after it to cancel (requantized)."""
    dq = node.input(0).producer
    if dq is None or dq.op != "DequantizeLinear" or not _per_tensor(dq):
        return None
    if _dtype(dq.output(0)) != DType.f32 or len(node.outputs) != 1:
        return None
    attrs = {k: v for k, v in node.attrs.items() if v is not None}
    moved = rw.emit_node(node.op, [dq.input(0), *node.inputs[1:]], attrs).output(0)
    return [rw.emit("DequantizeLinear", moved, dq.input(1), _zp(dq))]


def requantized(node: Node, rw: Rewriter):
    """Q(DQ(x)) with the same scale, zero point and type -> x (exact: (x - z) * s / s
    rounds back to x - z)."""
    dq = node.input(0).producer
    if dq is None or dq.op != "DequantizeLinear" or not (_per_tensor(dq) and _per_tensor(node)):
        return None
    if _dtype(dq.input(0)) != _dtype(node.output(0)) or _dtype(dq.output(0)) != DType.f32:
        return None
    scales = _constant(dq.input(1)), _constant(node.input(1))
    if scales[0] is None or scales[1] is None or not np.array_equal(scales[0], scales[1]):
        return None
    zeros = [_constant(_zp(n)) for n in (dq, node)]
    values = [0 if z is None else int(z.reshape(-1)[0]) for z in zeros]
    return [dq.input(0)] if values[0] == values[1] else None


def _zp(node: Node) -> Value | None:
    return node.inputs[2] if len(node.inputs) > 2 else None


RULES = [
    ("QuantizeLinear", quantized_conv),
    ("QuantizeLinear", quantized_max_pool),
    ("MatMul", quantized_matmul),
    ("Gemm", quantized_matmul),
    ("QLinearMatMul", qlinear_matmul),
    ("QuantizeLinear", requantized),
    *((op, dequantized_move) for op in sorted(_MOVES)),
]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
