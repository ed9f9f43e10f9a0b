# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A Graph as Graphviz .dot text; Fused nodes are drawn as clusters holding their body."""

from __future__ import annotations

import json

from .graph import Graph, Node, Value


def to_dot(graph: Graph, title: str = "graphkiln") -> str:
    lines = [
        f"digraph {json.dumps(title)} {{",
        "  rankdir=TB;",
        '  node [shape=box, fontname="monospace"];',
    ]
    ids: dict[Value, str] = {}
    for i, v in enumerate(graph.inputs):
        ids[v] = f"in{i}"
        lines.append(f"  in{i} [shape=ellipse, label={json.dumps(f'{v.name}: {v.type}')}];")
    counter = [0]
    for node in graph.nodes:
        if node.op == "Constant":
            continue
        _node(node, lines, ids, counter, "  ")
    for i, v in enumerate(graph.outputs):
        lines.append(f"  out{i} [shape=ellipse, label={json.dumps(f'{v.name}: {v.type}')}];")
        if v in ids:
            lines.append(f"  {ids[v]} -> out{i};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node(node: Node, lines: list[str], ids: dict, counter: list[int], indent: str) -> None:
    counter[0] += 1
    name = f"n{counter[0]}"
    edges = [ids[v] for v in node.inputs if v is not None and v in ids]
    if node.op == "Fused":
        body = node.attrs["body"]
        lines.append(f"{indent}subgraph cluster_{name} {{")
        lines.append(f"{indent}  label={json.dumps('fused ' + node.attrs['kind'])}; style=rounded;")
        inner: dict[Value, str] = dict(zip(body.inputs, (ids.get(v, "") for v in node.inputs)))
        last = name
        for member in body.nodes:
            if member.op == "Constant":
                continue
            _node(member, lines, inner, counter, indent + "  ")
            last = f"n{counter[0]}"
        lines.append(f"{indent}}}")
        for v in node.outputs:
            if v is not None:
                ids[v] = last
        return
    t = node.outputs[0].type if node.outputs and node.outputs[0] is not None else None
    label = json.dumps(node.op + "\n" + str(t))
    lines.append(f"{indent}{name} [label={label}];")
    for src in edges:
        if src:
            lines.append(f"{indent}{src} -> {name};")
    for v in node.outputs:
        if v is not None:
            ids[v] = name
