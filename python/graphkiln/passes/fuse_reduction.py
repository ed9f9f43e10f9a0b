# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fuse a reduction (Reduce*, Softmax, LayerNormalization, ...) with the pointwise node
that alone feeds its data input and the pointwise node that alone reads its output."""

from __future__ import annotations

from ..ir import Graph, Node
from .fusion import fusible, make_fused
from .op_classes import POINTWISE, REDUCTIONS
from .unfuse import inline_fused


def _is_pointwise(node) -> bool:
    return fusible(node) and (
        node.op in POINTWISE or (node.op == "Fused" and node.attrs["kind"] == "pointwise")
    )


def run(graph: Graph, ctx=None) -> Graph:
    for reduction in [n for n in graph.nodes if n.op in REDUCTIONS and fusible(n)]:
        uses = graph.users()
        members: list[Node] = []
        data = reduction.input(0)
        producer = data.producer
        if (
            producer is not None
            and _is_pointwise(producer)
            and len(uses.get(data, [])) == 1
            and data not in graph.outputs
        ):
            members += inline_fused(graph, producer) if producer.op == "Fused" else [producer]
        members.append(reduction)
        out = reduction.output(0)
        readers = uses.get(out, [])
        if len(readers) == 1 and out not in graph.outputs and _is_pointwise(readers[0]):
            consumer = readers[0]
            members += inline_fused(graph, consumer) if consumer.op == "Fused" else [consumer]
        if len(members) > 1:
            order = {n: i for i, n in enumerate(graph.nodes)}
            members.sort(key=order.__getitem__)
            make_fused(graph, members, "reduce")
    return graph
