# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Graph surgery shared by the passes: replacing uses, removing nodes, users."""

from __future__ import annotations

from ..ir import Graph, Node, Value
from ..ir.graph import node_subgraphs


def replace_uses(graph: Graph, old: Value, new: Value) -> None:
    """Make every reader of `old` (nodes, subgraph captures, graph outputs) read `new`."""
    for node in graph.nodes:
        node.inputs = [new if v is old else v for v in node.inputs]
        for sub in node_subgraphs(node):
            replace_uses(sub, old, new)
    graph.outputs = [new if v is old else v for v in graph.outputs]


def users(graph: Graph) -> dict[Value, list[Node]]:
    return graph.users()


def single_user(value: Value, uses: dict[Value, list[Node]], graph: Graph) -> Node | None:
    """The one node reading `value`, if exactly one does and it is not a graph output."""
    readers = uses.get(value, [])
    if len(readers) != 1 or value in graph.outputs:
        return None
    return readers[0]


def const_of(value: Value | None):
    return None if value is None else value.constant


def is_scalar_const(value: Value | None, number: float) -> bool:
    """True when `value` is a constant whose every element equals `number`."""
    data = const_of(value)
    if data is None or data.dtype == object or data.size == 0:
        return False
    try:
        return bool((data == number).all())
    except (TypeError, ValueError):
        return False
