# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fuse a Conv / Gemm / MatMul with the pointwise node (or fused chain) that alone reads its
output (bias, activation, residual add) into one Fused(kind=conv|gemm|matmul) node."""

from __future__ import annotations

from ..ir import Graph
from .fusion import fusible, make_fused
from .op_classes import EPILOGUE_ANCHORS, POINTWISE


def run(graph: Graph, ctx=None) -> Graph:
    uses = graph.users()
    for anchor in [n for n in graph.nodes if n.op in EPILOGUE_ANCHORS and fusible(n)]:
        out = anchor.output(0)
        readers = uses.get(out, [])
        if len(readers) != 1 or out in graph.outputs:
            continue
        members = [anchor]
        while len(readers) == 1 and out not in graph.outputs and _is_pointwise(readers[0]):
            members += _unfused(graph, readers[0])
            uses = graph.users()
            out = members[-1].output(0)
            readers = uses.get(out, [])
        if len(members) > 1:
            make_fused(graph, members, EPILOGUE_ANCHORS[anchor.op])
            uses = graph.users()
    return graph


def _is_pointwise(node) -> bool:
    return fusible(node) and (
        node.op in POINTWISE or (node.op == "Fused" and node.attrs["kind"] == "pointwise")
    )


def _unfused(graph: Graph, node):
    """A pointwise node, or the members of a pointwise Fused node put back in the graph."""
    if node.op != "Fused":
        return [node]
    from .unfuse import inline_fused

    return inline_fused(graph, node)
