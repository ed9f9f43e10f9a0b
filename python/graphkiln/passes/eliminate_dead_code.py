# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Remove nodes none of whose outputs is read (by a node, a subgraph or a graph output)."""

from __future__ import annotations

from ..ir import Graph
from ..ir.graph import node_reads, node_subgraphs


def run(graph: Graph, ctx=None) -> Graph:
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if any(v is not None and v in live for v in node.outputs):
            kept.append(node)
            for sub in node_subgraphs(node):
                run(sub, ctx)
            live.update(node_reads(node))
    kept.reverse()
    graph.nodes = kept
    return graph
