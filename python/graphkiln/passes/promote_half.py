# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Run in float32 what the target has no float16 / bfloat16 kernel for: a node the target
refuses, whose float tensors are half precision, and which the target runs once they are
float32, becomes Cast(to f32) on its half inputs, the node in float32, and Cast back to the
original type on its half outputs.

    %y: f16 = MatMul(%a: f16, %b: f16)                 (the cpu's MatMul is float32 only)
      -> %a32 = Cast(%a, f32); %b32 = Cast(%b, f32); %y32 = MatMul(%a32, %b32)
         %y = Cast(%y32, f16)

One rounding to half per output instead of one per internal step: as close to the exact
result as the half kernels would be, or closer. `ctx.supports(node)` (PassContext) decides,
as for inline_decompositions: nodes it cannot decide yet (symbolic dims) stay, and the
target's specialization per input shape calls `promote_refused` with its exact predicate.
Ops whose attributes name an element type (Cast's `to`, ...) are left alone: their result
type is their meaning. Without `ctx.supports` (ref) nothing changes."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import DType, Graph, Node, TensorType, Value

HALF = frozenset({DType.f16, DType.bf16})
# attributes that name an element type: promoting the node would change what it computes
TYPE_ATTRS = frozenset({"to", "dtype", "output_dtype", "stash_type", "output_datatype"})


def run(graph: Graph, ctx) -> Graph:
    decide = getattr(ctx, "supports", None)
    if decide is not None:
        promote_refused(graph, decide)
    return graph


def _is_half(value: Value | None) -> bool:
    return value is not None and isinstance(value.type, TensorType) and value.type.dtype in HALF


def _candidate(node: Node) -> bool:
    if node.op in ("Constant", "Cast", "CastLike") or TYPE_ATTRS & set(node.attrs):
        return False
    values = [v for v in (*node.inputs, *node.outputs) if v is not None]
    return any(_is_half(v) for v in values) and all(isinstance(v.type, TensorType) for v in values)


def _f32(t: TensorType) -> TensorType:
    return TensorType(DType.f32, t.dims)


def promote_refused(graph: Graph, decide: Callable[[Node], bool | None]) -> bool:
    """Promote every node of `graph` (not inside subgraphs) that `decide` refuses (False)
    and accepts in float32. Whether any was."""
    result: list[Node] = []
    changed = False
    for node in graph.nodes:
        if not _candidate(node) or decide(node) is not False:
            result.append(node)
            continue
        before, wide, after = _promoted(graph, node)
        if decide(wide) is not True:
            result.append(node)
            continue
        for out in wide.outputs:  # the outputs kept as they are now come from `wide`
            if out is not None and out.producer is node:
                out.producer = wide
        for back in after:
            back.output(0).producer = back
        result.extend([*before, wide, *after])
        changed = True
    graph.nodes = result
    return changed


def _cast(graph: Graph, value: Value, to: DType, name: str) -> Node:
    cast = graph.add_node("Cast", [value], {"to": to}, output_names=[name])
    graph.nodes.pop()  # placed by the caller
    return cast


def _promoted(graph: Graph, node: Node) -> tuple[list[Node], Node, list[Node]]:
    """(casts in, the node in float32, casts out): the casts out write the node's own
    half outputs (readers and graph outputs untouched); nothing in `graph` changes until the
    caller takes them (promote_refused sets the producers)."""
    before: list[Node] = []
    inputs: list[Value | None] = []
    for v in node.inputs:
        if v is not None and _is_half(v):
            cast = _cast(graph, v, DType.f32, v.name + "_f32")
            before.append(cast)
            inputs.append(cast.outputs[0])
        else:
            inputs.append(v)
    wide = Node(node.op, inputs, [], dict(node.attrs), node.name)
    wide.decomposition = node.decomposition
    after: list[Node] = []
    for out in node.outputs:
        if out is None or not _is_half(out):
            wide.outputs.append(out)
            continue
        assert isinstance(out.type, TensorType)
        inner = Value(graph.unique_name(out.name + "_f32"), _f32(out.type), wide)
        wide.outputs.append(inner)
        back = _cast(graph, inner, out.type.dtype, out.name)
        back.outputs = [out]
        after.append(back)
    return before, wide, after
