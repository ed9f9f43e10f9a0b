# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Structural checks of a Graph: values defined before use, unique names, known ops."""

from __future__ import annotations

from ..errors import GraphError
from .graph import Graph, node_subgraphs
from .schema import get_schema


def verify_graph(graph: Graph, outer: frozenset = frozenset()) -> None:
    defined = set(outer) | set(graph.inputs)
    names: set[str] = {v.name for v in graph.inputs}
    for node in graph.nodes:
        get_schema(node.op)
        for i, v in enumerate(node.inputs):
            if v is not None and v not in defined:
                raise GraphError(
                    f"{node.op} node {node.name!r}: input {i} (%{v.name}) is not defined before use"
                )
        for sub in node_subgraphs(node):
            verify_graph(sub, frozenset(defined))
        for v in node.outputs:
            if v is None:
                continue
            if v.name in names:
                raise GraphError(f"value name %{v.name} is defined twice")
            if v.producer is not node:
                raise GraphError(f"%{v.name}: producer link broken")
            names.add(v.name)
            defined.add(v)
    for v in graph.outputs:
        if v not in defined:
            raise GraphError(f"graph {graph.name}: output %{v.name} is not defined")
