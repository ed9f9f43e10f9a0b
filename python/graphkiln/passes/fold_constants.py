# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Evaluate nodes whose inputs are all constant (and Shape / Size of static shapes) into
constants, so the shape-arithmetic chains exporters emit collapse.

One walk in order folds whole chains: a node whose inputs were folded or changed type has
its output types inferred again before it is considered, so that Shape -> Gather -> Concat
-> Reshape -> Shape -> ... chains fold through the dims each folded Reshape makes static.
Fused nodes whose inputs are all constant fold too (their body is evaluated)."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, TensorType, Value, get_schema
from ..ir.schema import infer_outputs
from ..ir.graph import node_subgraphs
from .util import replace_many

# Ops whose result is not a function of their inputs.
NONDETERMINISTIC = {
    "RandomUniform",
    "RandomNormal",
    "RandomUniformLike",
    "RandomNormalLike",
    "Bernoulli",
    "Multinomial",
}


def run(graph: Graph, ctx) -> Graph:
    mapping: dict[Value, Value] = {}
    changed: set = set()  # values folded or given another type during this walk
    result = []
    for node in graph.nodes:
        # readers of folded values see the constants at once, so chains fold in one walk
        node.inputs = [None if v is None else mapping.get(v, v) for v in node.inputs]
        if changed and any(v in changed for v in node.inputs if v is not None):
            before = [None if v is None else v.type for v in node.outputs]
            refresh_node_types(node)
            changed.update(v for v, t in zip(node.outputs, before) if v is not None and v.type != t)
        values = _fold(node, ctx)
        if values is None:
            result.append(node)
            continue
        for old, data in zip(node.outputs, values):
            if old is None:
                continue
            const = graph.add_node("Constant", [], {"value": data}, output_names=[old.name + "_c"])
            graph.nodes.pop()
            result.append(const)
            mapping[old] = const.output(0)
            changed.add(mapping[old])
    graph.nodes = result
    replace_many(graph, mapping)
    if mapping and not (getattr(ctx, "types_refreshed", False) and _walk_refreshed(graph)):
        refresh_types(graph)
    return graph


def _walk_refreshed(graph: Graph) -> bool:
    """Whether the walk above re-inferred every type that folding could change, in a graph
    whose types were current before it: true unless a node has a subgraph other than a
    Fused body (an If / Loop / Scan body may read folded values as captures, which
    replace_many changes after the walk). Every other node whose inputs were folded or
    changed type was inferred again in order, and the rest read what they read before."""
    return all(n.op == "Fused" or not node_subgraphs(n) for n in graph.nodes)


def refresh_types(graph: Graph) -> None:
    """Re-run type inference in order: constants made by folding can make dims static."""
    for node in graph.nodes:
        refresh_node_types(node)


def refresh_node_types(node: Node) -> None:
    """Re-infer one node's output types from its inputs' (kept when inference fails); a
    Fused node's body first, its inputs taking the outer values' types."""
    if node.op == "Constant":
        return
    if node.op == "Fused":
        body = node.attrs["body"]
        for inner, outer in zip(body.inputs, node.inputs):
            if outer is not None:
                inner.type = outer.type
        refresh_types(body)
    elif node.op == "If":  # the branches read outer values: their types may have changed
        for branch in node_subgraphs(node):
            refresh_types(branch)
    try:
        types = infer_outputs(get_schema(node.op), node)
    except Exception:  # noqa: BLE001 - keep the types the node had
        return
    for value, t in zip(node.outputs, types):
        if value is not None and t is not None:
            value.type = t


def _fold(node: Node, ctx) -> list | None:
    if node.op == "Constant" or node.op in NONDETERMINISTIC:
        return None
    if node.op == "Fused":  # a body of its own (no captured values): foldable as a whole
        if any(n.op in NONDETERMINISTIC for n in node.attrs["body"].nodes):
            return None
    elif node_subgraphs(node):
        return None
    static = _static_shape_result(node)
    if static is not None:
        return [static]
    if ctx is None or ctx.evaluate is None:
        return None
    inputs = [None if v is None else v.constant for v in node.inputs]
    if any(v is not None and data is None for v, data in zip(node.inputs, inputs)):
        return None
    if not all(isinstance(v.type, TensorType) for v in node.outputs if v is not None):
        return None
    if any(
        isinstance(v.type, TensorType) and _too_big(v.type, ctx)  # all are (just above)
        for v in node.outputs
        if v is not None
    ):
        return None
    try:
        results = ctx.evaluate(node, inputs)
    except Exception:  # noqa: BLE001 - a node that cannot be folded stays as it is
        return None
    out = []
    for value, data in zip(node.outputs, results):
        data = np.asarray(data) if value is not None else None
        if data is not None and data.nbytes > ctx.max_fold_bytes:
            return None
        out.append(data)
    return out


def _too_big(t: TensorType, ctx) -> bool:
    n = t.nbytes()
    return n is None or n > ctx.max_fold_bytes


def _static_shape_result(node: Node):
    """Shape / Size of an input whose dims are all known, without reading its data."""
    if node.op not in ("Shape", "Size") or not node.inputs or node.inputs[0] is None:
        return None
    t = node.inputs[0].type
    if not isinstance(t, TensorType) or not t.is_static:
        return None
    if node.op == "Size":
        return np.array(t.numel(), dtype=np.int64)
    dims = np.array(t.dims, dtype=np.int64)
    rank = len(dims)
    start = node.attrs.get("start") or 0
    end = node.attrs.get("end")
    end = rank if end is None else end
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return dims[start:end]
