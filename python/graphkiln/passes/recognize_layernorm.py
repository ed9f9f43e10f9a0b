# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Recognize layer normalization written out (mean, centered variance, divide by the root)
as LayerNormalization over the last axis."""

from __future__ import annotations

from typing import cast

import numpy as np

from ..ir import Node, TensorType
from .patterns import producer, scalar, split_scalar_operand
from .recognize_softmax import _single_axis
from .rewrite import Rewriter, apply_rules


# d = x - ReduceMean(x, -1); y = d / Sqrt(ReduceMean(d^2, -1) + eps) [* gamma + beta]
#   -> LayerNormalization(x, gamma, beta, axis=-1, epsilon=eps)
def layernorm(node: Node, rw: Rewriter):
    centered = producer(node.inputs[0], "Sub")
    root = producer(node.inputs[1], "Sqrt")
    if centered is None or root is None:
        return None
    x = centered.input(0)
    mean = producer(centered.inputs[1], "ReduceMean")
    t = x.type
    if mean is None or mean.inputs[0] is not x or not isinstance(t, TensorType) or not t.rank:
        return None
    if _single_axis(mean) not in (-1, t.rank - 1) or not t.is_static:
        return None
    plus = producer(root.inputs[0], "Add")
    split = split_scalar_operand(plus) if plus is not None else None
    variance = producer(split[0], "ReduceMean") if split else None
    if split is None or not variance or _single_axis(variance) not in (-1, t.rank - 1):
        return None
    square = variance.input(0).producer
    d = centered.outputs[0]
    is_square = square is not None and (
        (square.op == "Mul" and square.inputs == [d, d])
        or (square.op == "Pow" and square.inputs[0] is d and scalar(square.inputs[1]) == 2.0)
    )
    if not is_square:
        return None
    width = cast("tuple[int, ...]", t.dims)[-1]  # static (checked above)
    gamma, beta, out = _affine(node, rw, width)
    rw.current = out.producer  # gamma / beta may be defined after the Div
    scale = gamma or rw.constant(np.ones(width, dtype=t.dtype.numpy), "ln_scale")
    inputs = [x, scale] + ([beta] if beta is not None else [])
    y = rw.emit("LayerNormalization", *inputs, axis=-1, epsilon=float(split[1]))
    if out is not node.outputs[0]:
        from .util import replace_uses

        replace_uses(rw.graph, out, y)
        return [None]
    return [y]


def _affine(node: Node, rw: Rewriter, width: int):
    """gamma / beta of a following `* gamma + beta` over the last axis, if present."""
    out = node.outputs[0]
    gamma = beta = None
    mul = rw.only_user(out)
    if mul is not None and mul.op == "Mul":
        g = mul.input(1) if mul.inputs[0] is out else mul.input(0)
        if g.constant is not None and g.constant.shape == (width,):
            gamma, out = g, mul.outputs[0]
            add = rw.only_user(out)
            if add is not None and add.op == "Add":
                b = add.input(1) if add.inputs[0] is out else add.input(0)
                if b.constant is not None and b.constant.shape == (width,):
                    beta, out = b, add.outputs[0]
    return gamma, beta, out


RULES = [("Div", layernorm)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
