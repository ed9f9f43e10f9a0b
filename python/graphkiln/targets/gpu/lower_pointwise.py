# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Pointwise ops and Fused nodes on the gpu target.

Every pointwise op, alone or as a run of fused body nodes, becomes one `Pointwise` step
written by the shared emit_pointwise (targets/native/lower_pointwise.py): the same
register program runs on both targets (src/gpu/pointwise.hip interprets it on the device).
Each such step also carries its program as generated CUDA/HIP source (codegen.py: attrs
"jit_source", "jit_entry", "jit_maps", "jit_aligned"), which the device compiles at plan
build when a runtime compiler is found (src/gpu/rtc.hip); the interpreter runs it otherwise.
A Fused node of another kind (conv, gemm, matmul, reduce) is lowered body node by body node
(but Conv + epilogue, MatMul + bias (+ Relu) and residual Add + LayerNormalization become one
step each):
its anchor through the gpu table, each run of pointwise nodes as one program per value the
rest of the body (or the graph) reads."""

from __future__ import annotations


from ...ir import Node, Value
from ..native.lower import LoweringContext, LoweringError
from ..native.lower_pointwise import HANDLED, node_supported
from ..native.lower_support import node_supported as lowerable
from .pointwise_steps import emit_program
from .lower_conv_epilogue import lower_conv_with_epilogue
from .lower_gemm_epilogue import lower_gemm_with_epilogue
from .lower_reduce import lower_residual_layer_norm


def lower_pointwise(node: Node, ctx: LoweringContext) -> None:
    emit_program([node], node.outputs[0], ctx, node.name)


lower_pointwise.supports = node_supported


def _as_cast(node: Node) -> Node:
    """CastLike(x, like) is Cast(x, to=like's dtype)."""
    attrs = {k: v for k, v in node.attrs.items()}
    attrs["to"] = node.inputs[1].type.dtype
    return Node("Cast", [node.inputs[0]], list(node.outputs), attrs, node.name)


def lower_cast_like(node: Node, ctx: LoweringContext) -> None:
    emit_program([_as_cast(node)], node.outputs[0], ctx, node.name)


lower_cast_like.supports = lambda node, ctx: node_supported(_as_cast(node))


def lower_fused(node: Node, ctx: LoweringContext) -> None:
    body = node.attrs["body"]
    for inner, outer in zip(body.inputs, node.inputs):
        ctx.bind(inner, ctx.slot_of(outer))
    kind = node.attrs.get("kind", "pointwise")
    # Conv + Relu / residual Add: one Conv step
    if kind == "conv" and lower_conv_with_epilogue(node, ctx):
        return
    nodes = [n for n in body.nodes if n.op != "Constant"]
    if kind in ("gemm", "matmul"):  # MatMul + bias (+ Relu): one Gemm step
        nodes = nodes[lower_gemm_with_epilogue(node, nodes, ctx) :]
    # residual Add + LayerNormalization: one step
    if kind == "reduce" and lower_residual_layer_norm(node, nodes, ctx):
        nodes = nodes[2:]
    # the rest (a kind's body its own kernel refused, or a pointwise chain): node by node,
    # pointwise runs as generated kernels
    result = body.outputs[0]
    out_value = node.outputs[0]
    readers: dict[Value, list[Node]] = {}
    for n in nodes:
        for v in n.inputs:
            if v is not None:
                readers.setdefault(v, []).append(n)
    group: list[Node] = []
    written: list[bool] = []

    def flush():
        members = set(group)
        for n in group:
            v = n.outputs[0]
            if v is result:
                ctx.bind(v, emit_program(group, v, ctx, node.name, ctx.output(out_value)))
                written.append(True)
            elif any(r not in members for r in readers.get(v, [])):
                emit_program(group, v, ctx, f"{node.name}/{v.name}")
        group.clear()

    for n in nodes:
        if n.op in HANDLED and node_supported(n):
            group.append(n)
            continue
        flush()
        lower = ctx.lowerings.get(n.op)
        if lower is None:
            raise LoweringError(
                f"the gpu target has no kernel for {n.op} (in fused node {node.name!r})"
            )
        lower(n, ctx)
    flush()
    if not written:  # the body ended in a non-pointwise node
        ctx.bind(out_value, ctx.slot_of(result))


def _fused_supported(node: Node, ctx=None) -> bool:
    for n in node.attrs["body"].nodes:
        if n.op == "Constant":
            continue
        if n.op in HANDLED and node_supported(n):
            continue
        if not lowerable(n, ctx):
            return False
    return True


lower_fused.supports = _fused_supported

# Cast and the integer bit ops: lower_bytes.py (which sends what the program can do here)
_ELSEWHERE = {"Cast", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift"}
LOWERINGS = {op: lower_pointwise for op in sorted(HANDLED - _ELSEWHERE)}
LOWERINGS["Fused"] = lower_fused
LOWERINGS["CastLike"] = lower_cast_like
