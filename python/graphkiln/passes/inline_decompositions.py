# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Replace each node the compiling target cannot run, but which carries a decomposition
(ir/decomposition.py: for an ONNX op, its function body), by a copy of that body.

    %y = NegativeLogLikelihoodLoss(%x, %t)           (the cpu has no kernel for it)
      -> %c = Unsqueeze(%t, [1]); %g = GatherElements(%x, %c); ... ; %y = Div(%s, %w)

`ctx.supports(node)` (PassContext: the target supplies it) says whether the target runs a
node: True, False, or None where that depends on dims a plan per input shape fixes (a graph
with symbolic input dims): such nodes stay, and the target decides when it specializes the
graph to one input shape (targets/native/specialize.py calls `inline_unsupported` with its
exact predicate). Without `ctx.supports` (ref, the oracle, runs every op itself) nothing
changes. The copies get fresh value names except the node's outputs, which stay the same
values (names, readers and graph outputs untouched); a body whose ops carry decompositions
of their own (SoftmaxCrossEntropyLoss -> NegativeLogLikelihoodLoss) is looked at again in
the next round, after the inlined constants were folded (fold_constants), which makes most
of their dims static, and the Ifs on them resolved (inline_constant_branches). Nodes inside
If / Loop / Scan bodies are not looked at: no native target lowers them."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Graph, Node, TensorType, Value, ValueType
from ..ir.clone import clone_graph
from . import fold_constants, inline_constant_branches
from .util import replace_many

MAX_ROUNDS = 8  # nested decompositions: each round inlines one level

Decide = Callable[[Node], "bool | None"]


def run(graph: Graph, ctx) -> Graph:
    decide = getattr(ctx, "supports", None)
    if decide is not None:
        inline_unsupported(graph, decide, ctx)
    return graph


def inline_unsupported(graph: Graph, decide: Decide, ctx) -> bool:
    """Inline, to a fixpoint (at most MAX_ROUNDS levels), every node with a decomposition
    for which `decide(node)` is False; constants folded after each round (`ctx` is the
    PassContext fold_constants gets) and the Ifs that became constant replaced by their
    branches (inline_constant_branches). Whether anything was inlined."""
    changed = False
    for _ in range(MAX_ROUNDS):
        if not _inline_round(graph, decide):
            break
        changed = True
        fold_constants.run(graph, ctx)
        # bodies branch on what folded (AffineGrid: 2-D or 3-D); the branches fold too
        inline_constant_branches.run(graph, ctx)
    return changed


def _inline_round(graph: Graph, decide: Decide) -> bool:
    mapping: dict[Value, Value] = {}
    result: list[Node] = []
    inlined = False
    for node in graph.nodes:
        if mapping:  # readers of an inlined output that the body returns as another value
            node.inputs = [None if v is None else mapping.get(v, v) for v in node.inputs]
        copies = None
        # decide first: a body is built only for a node that needs it
        if node.decomposition is not None and decide(node) is False:
            body = node.decomposition.body()
            if body is not None:
                copies = _instantiate(body, node, graph, mapping)
        if copies is None:
            result.append(node)
        else:
            result.extend(copies)
            inlined = True
    graph.nodes = result
    if mapping:
        replace_many(graph, mapping)
    return inlined


def _instantiate(body: Graph, node: Node, graph: Graph, mapping: dict) -> list[Node] | None:
    """Copies of `body`'s nodes computing `node` in `graph`, or None when the body no longer
    fits the node (a pass changed its inputs or outputs). Outputs of `node` that a body node
    makes become that copy's outputs; any other (a body returning an input, or one value
    twice) goes into `mapping` (node output -> the value replacing it)."""
    inputs = [v for v in node.inputs if v is not None]
    outputs = [v for v in node.outputs if v is not None]
    if len(inputs) != len(body.inputs) or len(outputs) != len(body.outputs):
        return None
    local: dict[Value, Value] = dict(zip(body.inputs, inputs))
    reuse: dict[Value, Value] = {}  # body value -> the node output it becomes
    for inner, outer in zip(body.outputs, outputs):
        if inner in reuse or inner in body.inputs:
            continue
        reuse[inner] = outer
    copies = []
    for b in body.nodes:
        copy = Node(
            b.op, [None if v is None else local[v] for v in b.inputs], [], {}, b.name or node.name
        )
        for key, value in b.attrs.items():
            copy.attrs[key] = (
                clone_graph(value, graph, local) if isinstance(value, Graph) else value
            )
        copy.decomposition = b.decomposition
        kept: list[tuple[Value, ValueType | None]] = []
        for out in b.outputs:
            if out is None:
                copy.outputs.append(None)
                continue
            new = reuse.get(out)
            if new is None:
                new = Value(graph.unique_name(out.name), out.type, copy)
            else:
                kept.append((new, new.type))
                new.producer = copy
            local[out] = new
            copy.outputs.append(new)
        fold_constants.refresh_node_types(copy)
        for value, before in kept:  # the node's output type, unless inference knows more
            if _static(before) or not _static(value.type):
                value.type = before
        copies.append(copy)
    for inner, outer in zip(body.outputs, outputs):
        if local[inner] is not outer:
            mapping[outer] = local[inner]
    return copies


def _static(t) -> bool:
    return isinstance(t, TensorType) and t.is_static
