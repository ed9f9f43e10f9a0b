# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A copy of a graph with dynamic input dims replaced by the shapes of one run (and, for the
few small integer inputs that decide shapes, such as a Reshape's shape or a Slice's starts
given as graph inputs, their values), types re-inferred and shape computations folded away:
the cpu target makes a plan per such key."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, TensorType
from ...ir.clone import clone_graph
from ...passes import eliminate_dead_code, fold_constants
from ...passes.context import PassContext
from ...passes.manager import run_pipeline


def specialize(graph: Graph, shapes: tuple, values: dict | None = None) -> Graph:
    """`values`: graph input index -> array, read as a constant by the copy's nodes (the
    input stays in the copy's inputs, unread)."""
    copy = clone_graph(graph)
    for value, shape in zip(copy.inputs, shapes):
        t = value.type
        if not isinstance(t, TensorType):
            continue
        if t.dims is not None and len(t.dims) != len(shape):
            raise ValueError(f"input {value.name!r} has rank {len(t.dims)}, got shape {shape}")
        value.type = TensorType(t.dtype, tuple(int(d) for d in shape))
    if values:
        replace = {
            copy.inputs[i]: copy.constant(np.asarray(a), copy.inputs[i].name + "_value")
            for i, a in values.items()
        }
        constants = [copy.nodes.pop() for _ in replace]  # Graph.constant appends at the end
        copy.nodes[:0] = constants[::-1]
        for node in copy.nodes:
            node.inputs = [replace.get(v, v) for v in node.inputs]
            if node.op == "Fused":
                _inline_constant_inputs(node, set(replace.values()))
        copy.outputs = [replace.get(v, v) for v in copy.outputs]
    _refresh_types(copy)
    from ..ref.target import evaluate

    # verified once, after both passes (not after each: this runs per input shape)
    run_pipeline(
        copy,
        [fold_constants, eliminate_dead_code],
        PassContext(evaluate=evaluate, types_refreshed=True),
        trace=False,
        verify_each=False,
    )
    return copy


def _refresh_types(graph: Graph) -> None:
    """Type inference again, in order, Fused bodies included (their inputs take the outer
    values' types first)."""
    fold_constants.refresh_types(graph)


def _inline_constant_inputs(fused, constants: set) -> None:
    """Inputs of a Fused node that became constants become Constant nodes of its body, so
    that the body's ops see them as constants (e.g. a reduction's axes)."""
    body = fused.attrs["body"]
    keep_outer, keep_inner, inlined = [], [], []
    for outer, inner in zip(fused.inputs, body.inputs):
        if outer in constants:
            const = body.constant(outer.constant, inner.name + "_value")
            inlined.append((inner, const, body.nodes.pop()))
        else:
            keep_outer.append(outer)
            keep_inner.append(inner)
    if not inlined:
        return
    mapping = {inner: const for inner, const, _ in inlined}
    for node in body.nodes:
        node.inputs = [mapping.get(v, v) for v in node.inputs]
    body.outputs = [mapping.get(v, v) for v in body.outputs]
    body.nodes[:0] = [node for _, _, node in inlined]
    fused.inputs, body.inputs = keep_outer, keep_inner


SMALL_VALUE_ELEMENTS = 64
# float inputs decide shapes only where read as these parameters (Resize's roi / scales)
FLOAT_PARAMETERS = {"Resize": (1, 2), "Upsample": (1,), "Range": (0, 1, 2)}


def _float_parameter(graph: Graph, value) -> bool:
    readers = graph.users().get(value, [])
    return (
        bool(readers)
        and value not in graph.outputs
        and all(
            i in FLOAT_PARAMETERS.get(n.op, ())
            for n in readers
            for i, v in enumerate(n.inputs)
            if v is value
        )
    )


def shape_deciding_inputs(graph: Graph, unsupported: list) -> list[int]:
    """Indices of small integer graph inputs that the unsupported nodes read, directly or
    through other nodes, and of small float ones read only as Resize's roi / scales or
    Range's bounds: planning on their values may make those nodes static."""
    index = {v: i for i, v in enumerate(graph.inputs)}
    found: set[int] = set()
    seen: set = set()
    stack = [v for n in unsupported for v in n.inputs if v is not None]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in index:
            t = v.type
            if (
                isinstance(t, TensorType)
                and t.dims is not None
                and all(isinstance(d, int) for d in t.dims)
                and int(np.prod(t.dims, dtype=np.int64)) <= SMALL_VALUE_ELEMENTS
                and (
                    np.dtype(t.dtype.numpy).kind in "iu"
                    or (np.dtype(t.dtype.numpy).kind == "f" and _float_parameter(graph, v))
                )
            ):
                found.add(index[v])
        elif v.producer is not None:
            stack.extend(w for w in v.producer.inputs if w is not None)
    return sorted(found)
