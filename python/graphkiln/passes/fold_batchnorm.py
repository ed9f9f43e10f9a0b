# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fold inference BatchNormalization into the Conv or Gemm before it (constant weights),
and turn any other BatchNormalization into Mul + Add for pointwise fusion."""

from __future__ import annotations

import numpy as np

from ..ir import Node, TensorType
from .rewrite import Rewriter, apply_rules


def _bn_params(node: Node):
    consts = [v.constant if v is not None else None for v in node.inputs[1:5]]
    arrays = [c for c in consts if c is not None]  # all four, or the node is not folded
    if len(arrays) < 4 or len(node.outputs) > 1 and any(v is not None for v in node.outputs[1:]):
        return None
    if node.attrs.get("training_mode"):
        return None
    scale, bias, mean, var = (c.astype(np.float64) for c in arrays)
    factor = scale / np.sqrt(var + node.attrs["epsilon"])
    return factor, bias - mean * factor


# BatchNormalization(Conv(x, W, B)) -> Conv(x, W * f, (B - mean) * f + bias)
# BatchNormalization(Gemm(x, W, C)) -> Gemm(x, W * f, C * f + shift) (channel = output column)
# BatchNormalization(x) -> x * f + shift (f, shift shaped [C, 1, ...])
def batchnorm(node: Node, rw: Rewriter):
    params = _bn_params(node)
    if params is None:
        return None
    factor, shift = params
    x = node.input(0)
    producer = x.producer
    if producer is not None and rw.only_user(x) is node:
        if producer.op == "Conv":
            return _fold_into_conv(producer, factor, shift, rw)
        if producer.op == "Gemm":
            return _fold_into_gemm(producer, factor, shift, rw)
    t = x.type
    if not isinstance(t, TensorType) or t.rank is None or t.rank < 2:
        return None
    dtype = t.dtype.numpy
    shape = (-1,) + (1,) * (t.rank - 2)
    f = rw.constant(factor.reshape(shape).astype(dtype), "bn_scale")
    s = rw.constant(shift.reshape(shape).astype(dtype), "bn_shift")
    return [rw.emit("Add", rw.emit("Mul", x, f), s)]


def _fold_into_conv(conv: Node, factor, shift, rw: Rewriter):
    w = conv.input(1).constant
    if w is None:
        return None
    b = conv.inputs[2].constant if len(conv.inputs) > 2 and conv.inputs[2] is not None else 0.0
    if b is None:
        return None
    dtype = w.dtype
    new_w = (w.astype(np.float64) * factor.reshape((-1,) + (1,) * (w.ndim - 1))).astype(dtype)
    new_b = (np.asarray(b, np.float64) * factor + shift).astype(dtype)
    inputs = [conv.inputs[0], rw.constant(new_w, "conv_w"), rw.constant(new_b, "conv_b")]
    return rw.emit_node("Conv", inputs, dict(conv.attrs)).outputs[:1]


def _fold_into_gemm(gemm: Node, factor, shift, rw: Rewriter):
    w = gemm.input(1).constant
    c = gemm.inputs[2].constant if len(gemm.inputs) > 2 and gemm.inputs[2] is not None else 0.0
    if w is None or c is None or w.ndim != 2:
        return None
    dtype = w.dtype
    # output column j = alpha * x @ B[:, j] (+ beta * C[j]); scale column j of B by factor[j]
    scaled_w = w.astype(np.float64) * (
        factor[:, None] if gemm.attrs.get("transB") else factor[None, :]
    )
    beta = gemm.attrs.get("beta", 1.0)
    new_c = (beta * np.asarray(c, np.float64) * factor + shift) / (beta or 1.0)
    inputs = [
        gemm.inputs[0],
        rw.constant(scaled_w.astype(dtype), "gemm_w"),
        rw.constant(np.asarray(new_c).astype(dtype), "gemm_c"),
    ]
    attrs = dict(gemm.attrs)
    if not beta:
        attrs["beta"] = 1.0
    return rw.emit_node("Gemm", inputs, attrs).outputs[:1]


RULES = [("BatchNormalization", batchnorm)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
