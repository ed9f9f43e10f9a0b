# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Recognize softmax written out (Exp of x minus its max, divided by the sum) as Softmax."""

from __future__ import annotations

from ..ir import Node
from .patterns import producer
from .rewrite import Rewriter, apply_rules


def _single_axis(node: Node) -> int | None:
    axes = node.inputs[1].constant if len(node.inputs) > 1 and node.inputs[1] is not None else None
    if axes is None or axes.size != 1 or not node.attrs.get("keepdims", 1):
        return None
    return int(axes.reshape(-1)[0])


# Div(Exp(x - ReduceMax(x, a)), ReduceSum(Exp(...), a)) -> Softmax(x, axis=a)
# Div(Exp(x), ReduceSum(Exp(x), a)) -> Softmax(x, axis=a)
def softmax(node: Node, rw: Rewriter):
    exp = producer(node.inputs[0], "Exp")
    total = producer(node.inputs[1], "ReduceSum")
    if exp is None or total is None or total.inputs[0] is not exp.outputs[0]:
        return None
    axis = _single_axis(total)
    if axis is None or len(rw.users_of(exp.outputs[0])) != 2:
        return None
    x = exp.inputs[0]
    shifted = producer(x, "Sub")
    if shifted is not None:
        peak = producer(shifted.inputs[1], "ReduceMax")
        if peak is not None and peak.inputs[0] is shifted.inputs[0] and _single_axis(peak) == axis:
            x = shifted.inputs[0]
    return [rw.emit("Softmax", x, axis=axis)]


RULES = [("Div", softmax)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
