# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Small matchers the recognition passes share."""

from __future__ import annotations

from ..ir import Node, TensorType, Value


def producer(value: Value | None, op: str) -> Node | None:
    """The node producing `value` if it is an `op` node."""
    if value is None or value.producer is None or value.producer.op != op:
        return None
    return value.producer


def scalar(value: Value | None) -> float | None:
    """The number a constant holds when all its elements are that number."""
    data = None if value is None else value.constant
    if data is None or data.size == 0 or data.dtype.kind not in "fiu":
        return None
    flat = data.reshape(-1)
    return float(flat[0]) if (flat == flat[0]).all() else None


def near(x: float | None, target: float, rel: float = 1e-4) -> bool:
    return x is not None and abs(x - target) <= rel * abs(target)


def split_scalar_operand(node: Node) -> tuple[Value, float] | None:
    """For a binary node with one scalar-constant operand: (the other operand, the scalar)."""
    a, b = node.inputs[0], node.inputs[1]
    number = scalar(b)
    if number is not None and a is not None:  # binary ops: both inputs always present
        return a, number
    number = scalar(a)
    if number is not None and b is not None:
        return b, number
    return None


def other_input(node: Node, value: Value | None) -> Value | None:
    if len(node.inputs) != 2:
        return None
    if node.inputs[0] is value:
        return node.inputs[1]
    if node.inputs[1] is value:
        return node.inputs[0]
    return None


def rank_of(value: Value | None) -> int | None:
    return value.type.rank if value is not None and isinstance(value.type, TensorType) else None
