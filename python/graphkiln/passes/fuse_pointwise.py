# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fuse chains and trees of elementwise ops whose intermediate values have one reader into
single Fused(kind=pointwise) nodes. Shape computations (values computed from Shape / Size
and constants only) are never fused: a plan per input shape folds them to constants, which
it cannot do inside a body."""

from __future__ import annotations

from ..ir import Graph, Node
from .fusion import fusible, make_fused
from .op_classes import POINTWISE


def shape_computations(graph: Graph) -> set[Node]:
    """Nodes whose outputs are computed from Shape / Size results and constants only (at
    least one Shape / Size among what they read, directly or not)."""
    found: set[Node] = set()
    for node in graph.nodes:
        if node.op in ("Shape", "Size"):
            found.add(node)
            continue
        inputs = [v for v in node.inputs if v is not None]
        if (
            inputs
            and any(v.producer in found for v in inputs)
            and all(v.producer in found or v.constant is not None for v in inputs)
        ):
            found.add(node)
    return found


def run(graph: Graph, ctx=None) -> Graph:
    uses = graph.users()
    shape_nodes = shape_computations(graph)
    group_of: dict[Node, list[Node]] = {}
    for node in list(graph.nodes):
        if node.op not in POINTWISE or not fusible(node) or node in shape_nodes:
            continue
        group: list[Node] = []
        for v in node.inputs:
            if v is None:
                continue
            producer = v.producer
            if (
                producer in group_of
                and group_of[producer][-1] is producer
                and len(uses.get(v, [])) == 1
                and v not in graph.outputs
                and group_of[producer] is not group
            ):
                for member in group_of[producer]:
                    if member not in group:
                        group.append(member)
        group.append(node)
        order = {n: i for i, n in enumerate(graph.nodes)}
        group.sort(key=order.__getitem__)
        for member in group:
            group_of[member] = group
    seen = set()
    for group in list(group_of.values()):
        if id(group) in seen or len(group) < 2:
            continue
        seen.add(id(group))
        make_fused(graph, group, "pointwise")
    return graph
