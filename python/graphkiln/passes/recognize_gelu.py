# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Recognize GELU written out by exporters (erf form and tanh form) as one Gelu op."""

from __future__ import annotations

import math

from ..ir import Node, Value
from .patterns import near, other_input, producer, split_scalar_operand
from .rewrite import Rewriter, apply_rules


def _one_plus(node: Node, rw: Rewriter) -> Value | None:
    """The Add(node output, 1) reading `node` alone, or None."""
    user = rw.only_user(node.outputs[0])
    if user is None or user.op != "Add":
        return None
    split = split_scalar_operand(user)
    return user.outputs[0] if split and split[0] is node.outputs[0] and split[1] == 1.0 else None


def _times_half_x(one_plus: Value, x: Value, rw: Rewriter) -> Node | None:
    """The node computing 0.5 * x * one_plus, in the orders exporters use."""
    mul = rw.only_user(one_plus)
    if mul is None or mul.op != "Mul":
        return None
    partner = other_input(mul, one_plus)
    if partner is x:  # Mul(Mul(x, a), 0.5)
        last = rw.only_user(mul.outputs[0])
        if last is not None and last.op == "Mul":
            split = split_scalar_operand(last)
            if split and split[0] is mul.outputs[0] and split[1] == 0.5:
                return last
        return None
    half = producer(partner, "Mul")  # Mul(Mul(x, 0.5), a)
    if half is not None:
        split = split_scalar_operand(half)
        if split and split[0] is x and split[1] == 0.5:
            return mul
    return None


# Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) -> Gelu(x)
def erf_form(node: Node, rw: Rewriter):
    scaled = node.input(0).producer
    if scaled is None or scaled.op not in ("Div", "Mul"):
        return None
    split = split_scalar_operand(scaled)
    if split is None or scaled.inputs[0] is not split[0]:
        return None
    x, c = split
    if not (near(c, math.sqrt(2)) if scaled.op == "Div" else near(c, 1 / math.sqrt(2))):
        return None
    one_plus = _one_plus(node, rw)
    last = _times_half_x(one_plus, x, rw) if one_plus is not None else None
    if last is None:
        return None
    return _replace(last, rw.emit("Gelu", x, approximate="none"), rw)


# 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) -> Gelu(x, approximate=tanh)
def tanh_form(node: Node, rw: Rewriter):
    scaled = producer(node.inputs[0], "Mul")
    split = scaled and split_scalar_operand(scaled)
    if not split or not near(split[1], math.sqrt(2 / math.pi)):
        return None
    inner = producer(split[0], "Add")
    if inner is None:
        return None
    for x in inner.inputs:
        if x is None:
            continue
        cubic = producer(other_input(inner, x), "Mul")
        cube_split = cubic and split_scalar_operand(cubic)
        if not cube_split or not near(cube_split[1], 0.044715):
            continue
        power = producer(cube_split[0], "Pow")
        exponent = split_scalar_operand(power) if power is not None else None
        if power is None or power.inputs[0] is not x or exponent is None or exponent[1] != 3.0:
            continue
        one_plus = _one_plus(node, rw)
        last = _times_half_x(one_plus, x, rw) if one_plus is not None else None
        if last is not None:
            return _replace(last, rw.emit("Gelu", x, approximate="tanh"), rw)
    return None


def _replace(last: Node, gelu: Value, rw: Rewriter):
    from .util import replace_uses

    replace_uses(rw.graph, last.output(0), gelu)
    return [None]


RULES = [("Erf", erf_form), ("Tanh", tanh_form)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
