# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Building Fused nodes: a set of nodes with one escaping output becomes one node whose
`body` graph holds copies of them."""

from __future__ import annotations

from ..ir import Graph, Node, TensorType, Value
from ..ir.graph import node_subgraphs

INLINE_CONST_ELEMENTS = 1024


def fusible(node: Node) -> bool:
    """Single tensor output of known type; no subgraphs except a Fused node's body."""
    return (
        len(node.outputs) == 1
        and node.outputs[0] is not None
        and isinstance(node.outputs[0].type, TensorType)
        and (node.op == "Fused" or not node_subgraphs(node))
    )


def make_fused(graph: Graph, members: list[Node], kind: str) -> Node:
    """Replace `members` (in graph order; the last one's output is the only value used
    outside) by one Fused node placed where the last member was."""
    head = members[-1]
    result = head.output(0)
    body = Graph(f"{kind}_{result.name}", graph)
    inside: dict[Value, Value] = {}
    outer_inputs: list[Value | None] = []
    for node in members:
        for v in node.inputs:
            if v is None or v in inside:
                continue
            data = v.constant
            if data is not None and data.size <= INLINE_CONST_ELEMENTS:
                inside[v] = body.constant(data, v.name)
            else:
                inside[v] = body.add_input(v.name, v.type)
                outer_inputs.append(v)
        copy = Node(
            node.op,
            [None if v is None else inside[v] for v in node.inputs],
            [],
            dict(node.attrs),
            node.name,
        )
        for v in node.outputs:
            assert v is not None  # fusible members have all their outputs
            new = Value(body.unique_name(v.name), v.type, copy)
            inside[v] = new
            copy.outputs.append(new)
        body.nodes.append(copy)
    body.outputs = [inside[result]]
    fused = Node("Fused", outer_inputs, [result], {"body": body, "kind": kind}, head.name)
    result.producer = fused
    position = graph.nodes.index(head)
    graph.nodes[position] = fused
    member_set = set(members[:-1])
    graph.nodes = [n for n in graph.nodes if n not in member_set]
    return fused
