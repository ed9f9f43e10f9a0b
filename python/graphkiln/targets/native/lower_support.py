# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Whether a native target (cpu, gpu) can run a node: a lowering exists for its op in the
target's table, the lowering's optional `supports(node, ctx)` predicate accepts it, and
every tensor it touches has static dims and an element type the kernels handle.

`ctx` is what a predicate may consult beyond the node: the target's name and lowering
table (a SupportContext, or the LoweringContext during lowering, which has both), so that
a Fused node's support can ask about its body's ops without importing a table."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable, Mapping

from ...ir import DType, Node, TensorType
from .plan import BYTE_DTYPES

KERNEL_DTYPES = frozenset(
    {
        DType.f32,
        DType.f64,
        DType.f16,
        DType.bf16,
        DType.i8,
        DType.i16,
        DType.i32,
        DType.i64,
        DType.u8,
        DType.u16,
        DType.u32,
        DType.u64,
        DType.bool,
    }
)


def _static_tensor(value, byte_dtypes: bool = False) -> bool:
    t = value.type
    dtype_ok = isinstance(t, TensorType) and (
        t.dtype in KERNEL_DTYPES or (byte_dtypes and t.dtype in BYTE_DTYPES)
    )
    return dtype_ok and t.dims is not None and all(isinstance(d, int) for d in t.dims)


@dataclass(frozen=True)
class SupportContext:
    """A target's name and its lowering table (op -> lowering function)."""

    target: str
    lowerings: Mapping[str, Callable]

    def supported(self, node: Node, static: bool = True) -> bool:
        return node_supported(node, self, static)


def node_supported(node: Node, ctx, static: bool = True) -> bool:
    """Whether `ctx.lowerings` lowers `node` (ctx: a SupportContext or a LoweringContext).
    `static=False` (a graph with dynamic inputs, before its plan per shape): only whether a
    lowering exists (and, where the lowering has a `possible(node, ctx)` predicate, whether some
    plan could run the node: lower_loops.py)."""
    lower = ctx.lowerings.get(node.op)
    if lower is None:
        return False
    if not static:  # a lowering may say that no shapes make the node supported (`possible`)
        possible = getattr(lower, "possible", None)
        return possible is None or bool(possible(node, ctx))
    values = [v for v in (*node.inputs, *node.outputs) if v is not None]
    # a lowering with `byte_dtypes = True` also takes plan.BYTE_DTYPES (float8, int4, ...)
    byte_dtypes = bool(getattr(lower, "byte_dtypes", False))
    # one with `bounded_outputs = True` writes outputs of dims decided at run time into a
    # slot of its bound (LoweringContext.bounded_output); its predicate checks them
    if getattr(lower, "bounded_outputs", False):
        values = [v for v in node.inputs if v is not None]
    if not all(_static_tensor(v, byte_dtypes) for v in values):
        return False
    check = getattr(lower, "supports", None)
    return check is None or bool(check(node, ctx))


def support_decision(node: Node, ctx) -> bool | None:
    """Whether `ctx.lowerings` lowers `node`, where that can be known before plans per input
    shape: False without a lowering or for an element type no kernel handles, None while a
    tensor it touches has symbolic (or unknown) dims (the plan of each input shape decides:
    node_supported then), else node_supported's answer. Compiling decomposes the nodes this
    is False for (Target.node_support, passes/inline_decompositions.py)."""
    lower = ctx.lowerings.get(node.op)
    if lower is None:
        return False
    byte_dtypes = bool(getattr(lower, "byte_dtypes", False))
    undecided = False
    for v in (*node.inputs, *node.outputs):
        if v is None:
            continue
        t = v.type
        if not isinstance(t, TensorType):
            return False if t is not None else None  # a sequence / optional: no kernel
        if not (t.dtype in KERNEL_DTYPES or (byte_dtypes and t.dtype in BYTE_DTYPES)):
            return False
        if t.dims is None or not all(isinstance(d, int) for d in t.dims):
            undecided = True
    return None if undecided else node_supported(node, ctx)


def supports(predicate):
    """Decorator: attach `predicate(node, ctx) -> bool` to a lowering function."""

    def attach(lower):
        lower.supports = predicate
        return lower

    return attach


# ops whose outputs depend on their input's shape only, never on its values
SHAPE_READERS = frozenset({"Shape", "Size"})


def folded_when_specialized(graph) -> set:
    """The nodes of a graph with symbolic input dims that its specialization to static
    shapes folds to constants (specialize.py): Shape / Size and every node computed only from
    their outputs and constants (Gather, Concat, Slice, Range, ...). A target need not lower
    them to run the graph, since no plan ever holds them."""
    from ...ir.graph import node_subgraphs
    from ...passes.fold_constants import NONDETERMINISTIC

    known: set = set()
    folded: set = set()
    for node in graph.nodes:
        outputs = [v for v in node.outputs if v is not None]
        if node.op == "Constant":
            known.update(outputs)
            continue
        if node.op in NONDETERMINISTIC or node_subgraphs(node):
            continue
        inputs = [v for v in node.inputs if v is not None]
        if node.op in SHAPE_READERS or (
            inputs and all(v in known or v.constant is not None for v in inputs)
        ):
            folded.add(node)
            known.update(outputs)
    return folded
