# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Graph surgery shared by the passes: replacing uses, removing nodes, users."""

from __future__ import annotations

from ..ir import Graph, Value
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


def is_scalar_const(value: Value | None, number: float) -> bool:
    """True when `value` is a constant whose every element equals `number`."""
    data = None if value is None else value.constant
    if data is None or data.dtype == object or data.size == 0:
        return False
    try:
        return bool((data == number).all())
    except (TypeError, ValueError):
        return False
