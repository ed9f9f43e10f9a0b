# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Put a Fused node's body back into the graph (so a larger fusion can take it)."""

from __future__ import annotations

from ..ir import Graph, Node, Value


def inline_fused(graph: Graph, fused: Node) -> list[Node]:
    """Replace `fused` by copies of its body nodes; returns them in order. The fused node's
    output Value object is kept as the last copy's output."""
    body = fused.attrs["body"]
    mapping: dict[Value, Value | None] = dict(zip(body.inputs, fused.inputs))
    copies = []
    result = fused.output(0)
    for node in body.nodes:
        copy = Node(
            node.op,
            [None if v is None else mapping[v] for v in node.inputs],
            [],
            dict(node.attrs),
            node.name,
        )
        for v in node.outputs:
            assert v is not None  # a body's nodes have all their outputs (make_fused)
            if v is body.outputs[0]:
                new = result
                new.producer = copy
            else:
                new = Value(graph.unique_name(v.name), v.type, copy)
            mapping[v] = new
            copy.outputs.append(new)
        copies.append(copy)
    position = graph.nodes.index(fused)
    graph.nodes[position : position + 1] = copies
    # The body's inlined constants stay in the graph as ordinary constants; callers fuse the
    # computing nodes, and make_fused copies small constants back into the new body.
    return [c for c in copies if c.op != "Constant"]
