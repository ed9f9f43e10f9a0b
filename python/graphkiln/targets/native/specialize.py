# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A copy of a graph with dynamic input dims replaced by the shapes of one run (and, for the
few small integer inputs that decide shapes, such as a Reshape's shape or a Slice's starts
given as graph inputs, their values), types re-inferred and shape computations folded away:
the cpu target makes a plan per such key. Nodes the target refuses at these shapes that carry
a decomposition are replaced by it there (`supports`: the target's exact predicate), since
before the shapes are known the pass pipeline could not decide them. Small Loop / Scan nodes
whose trip counts are constants then are unrolled (`unroll_small_loops`,
passes/unroll_loops.py): a graph holding one is specialized even where its input shapes are
static (`plan_graph`)."""

from __future__ import annotations

import numpy as np

from collections.abc import Callable

from ...ir import DType, Graph, Node, TensorType
from ...ir.clone import clone_graph
from ...ir.graph import node_subgraphs
from ...passes import (
    eliminate_dead_code,
    fold_constants,
    inline_constant_branches,
    inline_decompositions,
    promote_half,
    unroll_loops,
)
from ...passes.context import PassContext
from ...passes.manager import run_pipeline


def specialize(
    graph: Graph,
    shapes: tuple,
    values: dict | None = None,
    supports: Callable[[Node], bool] | None = None,
) -> Graph:
    """`values`: graph input index -> array, read as a constant by the copy's nodes (the
    input stays in the copy's inputs, unread). `supports(node)`: whether the target runs a
    node of static shapes (lower_support.node_supported with its table); the nodes it
    refuses are decomposed where they can be (decompose_refused)."""
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
    if supports is not None:
        decompose_refused(copy, supports)
    from ..ref.target import evaluate

    # verified once, after both passes (not after each: this runs per input shape)
    context = PassContext(evaluate=evaluate, types_refreshed=True)
    run_pipeline(
        copy, [fold_constants, eliminate_dead_code], context, trace=False, verify_each=False
    )
    unroll_small_loops(copy, supports, context)
    if _type_loop_bodies(copy):
        _refresh_types(copy)  # the Loops' outputs, then their readers
    _fold_branches(copy, context)
    return copy


def _type_loop_bodies(graph: Graph) -> bool:
    """The bodies of the Loops left (not unrolled) typed from the loop's inputs: the
    iteration number, the condition and the carried values' types of this plan; kept only
    where each carried value leaves the body with the type it came in with (a loop whose
    state changes shape from one iteration to the next keeps its body as it was: no
    native target compiles it). Whether any body was typed."""
    typed = False
    for node in graph.nodes:
        if node.op != "Loop":
            continue
        body = node.attrs["body"]
        carried = node.inputs[2:]
        if len(body.inputs) != len(carried) + 2 or any(v is None for v in carried):
            continue
        before = [v.type for v in body.inputs]
        body.inputs[0].type = TensorType(DType.i64, ())
        body.inputs[1].type = TensorType(DType.bool, ())
        for inner, outer in zip(body.inputs[2:], carried):
            inner.type = outer.type
        _refresh_types(body)
        steady = all(
            out.type == inner.type
            for inner, out in zip(body.inputs[2:], body.outputs[1 : 1 + len(carried)])
        )
        if not steady:
            for v, t in zip(body.inputs, before):
                v.type = t
            _refresh_types(body)
            continue
        fold_constants.refresh_node_types(node)
        typed = True
    return typed


MAX_UNROLL_ROUNDS = 4  # a Loop inside an unrolled body unrolls in the next round


def unroll_small_loops(
    graph: Graph, supports: Callable[[Node], bool] | None, context: PassContext
) -> bool:
    """Unroll the small Loop / Scan nodes of a graph of static shapes whose trip counts are
    constants now (passes/unroll_loops.py, within its node budget for the whole graph), then
    type, decompose what `supports` refuses and fold, as the specialization does, and splice
    the Ifs the iteration numbers decide (inline_constant_branches); again for Loops that
    were inside the bodies. Whether any was unrolled (the graph is unchanged otherwise)."""
    budget, changed = unroll_loops.MAX_UNROLLED_NODES, False
    for _ in range(MAX_UNROLL_ROUNDS):
        added = unroll_loops.unroll_loops(graph, budget)
        if not added:
            break
        budget, changed = budget - added, True
        _refresh_types(graph)
        if supports is not None:
            decompose_refused(graph, supports)
        run_pipeline(
            graph, [fold_constants, eliminate_dead_code], context, trace=False, verify_each=False
        )
        inline_constant_branches.run(graph, context)  # folds again where it splices
    return changed


def plan_graph(
    graph: Graph,
    shapes: tuple,
    values: dict | None = None,
    supports: Callable[[Node], bool] | None = None,
) -> Graph:
    """The graph a plan of these input shapes (and values) is made from: `graph` itself
    where its inputs are static, no values are given and it holds no Loop / Scan to unroll;
    else its specialization."""
    from .lower_loops import holds_loops

    if not values and not holds_loops(graph) and _static(graph.inputs):
        return graph
    return specialize(graph, shapes, values, supports)


def _static(values) -> bool:
    return all(
        isinstance(v.type, TensorType)
        and v.type.dims is not None
        and all(isinstance(d, int) for d in v.type.dims)
        for v in values
    )


def _fold_branches(graph: Graph, context: PassContext) -> None:
    """The same folding inside If branches (their shape computations read the outer
    values this plan made static), nested Ifs included."""
    for node in graph.nodes:
        if node.op not in ("If", "Loop"):
            continue
        for branch in node_subgraphs(node):  # not verified alone: it reads outer values
            fold_constants.run(branch, context)
            eliminate_dead_code.run(branch, context)
            _fold_branches(branch, context)


def decompose_refused(graph: Graph, supports: Callable[[Node], bool]) -> bool:
    """Replace the nodes of `graph` (types current, dims static) that `supports` refuses
    and that carry a decomposition by their bodies, folded; types are current again after.
    Whether any was."""
    from ..ref.target import evaluate

    def decide(node: Node) -> bool:
        return bool(supports(node))

    ctx = PassContext(evaluate=evaluate)
    inlined = inline_decompositions.inline_unsupported(graph, decide, ctx)
    # what is left refused only for its half-precision types runs in float32 between Casts
    promoted = promote_half.promote_refused(graph, decide)
    if not (inlined or promoted):
        return False
    _refresh_types(graph)
    return True


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
# float inputs decide shapes only where read as these parameters (Resize's roi / scales,
# Range's bounds, OneHot's depth)
FLOAT_PARAMETERS = {"Resize": (1, 2), "Upsample": (1,), "Range": (0, 1, 2), "OneHot": (1,)}


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
    Range's bounds or OneHot's depth: planning on their values may make those nodes static."""
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
