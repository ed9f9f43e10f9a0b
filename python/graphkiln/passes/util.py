# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Graph surgery shared by the passes: replacing uses, removing nodes, users."""

from __future__ import annotations

from ..ir import Graph, Node, Value
from ..ir.graph import node_subgraphs


def replace_uses(graph: Graph, old: Value, new: Value, readers=None) -> None:
    """Make every reader of `old` (nodes, subgraph captures, graph outputs) read `new`.
    `readers`, when known (from graph.users()), limits the nodes visited."""
    replace_many(graph, {old: new}, readers)


def replace_many(graph: Graph, mapping: dict[Value, Value], readers=None) -> None:
    """Apply several replacements in one walk (chains a -> b -> c resolve to c)."""
    def target(v: Value) -> Value:
        while v in mapping:
            v = mapping[v]
        return v

    for node in graph.nodes if readers is None else readers:
        if any(v in mapping for v in node.inputs if v is not None):
            node.inputs = [None if v is None else target(v) for v in node.inputs]
        if node.attrs:
            for sub in node_subgraphs(node):
                replace_many(sub, mapping)
    if any(v in mapping for v in graph.outputs):
        graph.outputs = [target(v) for v in graph.outputs]


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
