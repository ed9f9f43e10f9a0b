# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Replace each If whose condition is a constant by the nodes of the branch it takes.

    %o = If(%c) {then_branch = graph { %t = Neg(%x); return %t }, else_branch = ...}
      with %c = Constant(true)  ->  %o = Neg(%x)

ONNX function bodies branch on what the node's attributes and input ranks decide
(AffineGrid: 2-D or 3-D, align_corners), so once constants are folded their Ifs are
constant; no native target runs an If. The branch's nodes move into the graph (their values
renamed where their names are taken); the If's outputs stay the same values, made by the
branch's nodes, unless the branch returns a value of the graph (then readers read that)."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, TensorType, Value
from ..ir.graph import node_subgraphs
from . import fold_constants
from .util import replace_many


MAX_ROUNDS = 8  # an If inside a taken branch is constant once the splice folded


def run(graph: Graph, ctx) -> Graph:
    """Splice to a fixpoint, folding constants (fold_constants, with `ctx`) after each
    round: the condition of an If that was inside a branch may fold then."""
    for _ in range(MAX_ROUNDS):
        if not splice_constant_branches(graph):
            break
        fold_constants.run(graph, ctx)
    return graph


def splice_constant_branches(graph: Graph) -> bool:
    """The rewrite above, then every type inferred again (the branch's nodes were typed
    inside the branch, and the If's readers from its outputs' types): whether any If was."""
    if not any(_taken_branch(n) is not None for n in graph.nodes):
        return False
    mapping: dict[Value, Value] = {}
    result: list[Node] = []
    for node in graph.nodes:
        if mapping:
            node.inputs = [None if v is None else mapping.get(v, v) for v in node.inputs]
        branch = _taken_branch(node)
        if branch is None:
            result.append(node)
        else:
            result.extend(_splice(branch, node, graph, mapping))
    graph.nodes = result
    if mapping:
        replace_many(graph, mapping)
    fold_constants.refresh_types(graph)
    return True


def _taken_branch(node: Node) -> Graph | None:
    if node.op != "If" or node.inputs[0] is None:
        return None
    cond = node.inputs[0].constant
    if cond is None or np.size(cond) != 1:
        return None
    branch = node.attrs["then_branch" if bool(np.asarray(cond).reshape(())) else "else_branch"]
    if branch.inputs or len(branch.outputs) != len(node.outputs):
        return None
    return branch


def _splice(branch: Graph, node: Node, graph: Graph, mapping: dict) -> list[Node]:
    """The branch's nodes, moved into `graph`, computing `node`'s outputs."""
    own = {v for n in branch.nodes for v in n.outputs if v is not None}
    rename: dict[Value, Value] = {}  # branch value -> the If output it becomes
    for inner, outer in zip(branch.outputs, node.outputs):
        if outer is not None and inner in own and inner not in rename:
            rename[inner] = outer
    for n in branch.nodes:
        n.inputs = [None if v is None else rename.get(v, v) for v in n.inputs]
        for sub in node_subgraphs(n):
            sub.parent = graph
            if rename:
                replace_many(sub, rename)
        for i, v in enumerate(n.outputs):
            if v is None:
                continue
            outer = rename.get(v)
            if outer is None:
                v.name = graph.unique_name(v.name)
                continue
            if not (isinstance(outer.type, TensorType) and outer.type.is_static):
                outer.type = v.type or outer.type  # the branch's type says more
            outer.producer = n
            n.outputs[i] = outer
    for inner, outer in zip(branch.outputs, node.outputs):
        if outer is not None and rename.get(inner) is not outer:
            mapping[outer] = rename.get(inner, inner)
    return list(branch.nodes)
