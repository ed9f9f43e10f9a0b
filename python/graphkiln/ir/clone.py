# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Deep copy of a Graph (constants' arrays are shared: the IR never mutates them)."""

from __future__ import annotations

from .graph import Graph, Node, Value


def clone_graph(graph: Graph, parent: Graph | None = None, mapping: dict | None = None) -> Graph:
    mapping = {} if mapping is None else mapping
    copy = Graph(graph.name, parent)
    copy._names = set(graph._names)
    for v in graph.inputs:
        mapping[v] = Value(v.name, v.type)
        copy.inputs.append(mapping[v])
    for node in graph.nodes:
        new = Node(
            node.op,
            [None if v is None else mapping.get(v, v) for v in node.inputs],
            [],
            {},
            node.name,
        )
        new.decomposition = node.decomposition  # shared: a body is never mutated
        for key, value in node.attrs.items():
            new.attrs[key] = (
                clone_graph(value, copy, mapping) if isinstance(value, Graph) else value
            )
        for out in node.outputs:
            if out is None:
                new.outputs.append(None)
            else:
                mapping[out] = Value(out.name, out.type, new)
                new.outputs.append(mapping[out])
        copy.nodes.append(new)
    copy.outputs = [mapping.get(v, v) for v in graph.outputs]
    return copy
