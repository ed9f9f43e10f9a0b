# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`Fused` nodes: one IR op whose lowering depends on attrs["kind"] — a pointwise chain,
a reduction with its prologue / epilogue, or a convolution / GEMM / MatMul with its
epilogue (FAMILIES: the lowerings of lower_pointwise, lower_reduce, lower_conv and
lower_matmul)."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from ...ir import Node
from ..native.lower import LoweringContext, LoweringError
from ..native.lower_support import node_supported, supports
from ..native import lower_pointwise
from ..native.plan import BYTE_DTYPES
from . import lower_conv, lower_matmul, lower_reduce
from .lower_byte_table import lower_byte_table


def _lower_pointwise(node: Node, ctx: LoweringContext) -> None:
    """A function of one byte as a table lookup (lower_byte_table.py), else the pointwise
    interpreter."""
    if not lower_byte_table(node, ctx):
        lower_pointwise.lower_fused_pointwise(node, ctx)


# Fused kind -> (lowering, predicate): the kinds the fusion passes produce
# (passes/pipelines.py FUSED_KINDS), each lowered by its family module
FAMILIES = {
    "pointwise": (_lower_pointwise, lower_pointwise.fused_pointwise_supported),
    "reduce": (lower_reduce.lower_fused_reduce, lower_reduce.fused_reduce_supported),
    "conv": (lower_conv.lower_fused_conv, lower_conv.fused_conv_supported),
    "gemm": (lower_matmul.lower_fused_matmul, lower_matmul.fused_matmul_supported),
    "matmul": (lower_matmul.lower_fused_matmul, lower_matmul.fused_matmul_supported),
}


def _lookup(kind: str, index: int):
    """The lowering (index 1) or predicate (index 2) of a Fused kind, None if unknown."""
    family = FAMILIES.get(kind)
    return None if family is None else family[index - 1]


_memo = threading.local()


@contextmanager
def memoized_family_checks():
    """Within it (on this thread), _family_supported answers once per node: split_segments
    asks for every Fused node of a specialized graph (node_supported) and lower_fused asks
    again, and the answer depends on the node and its values' types only, which lowering
    leaves as they are. The table lives as long as the block, so it never outlives the
    graph it was made for."""
    outer = getattr(_memo, "table", None)
    _memo.table = {} if outer is None else outer
    try:
        yield
    finally:
        _memo.table = outer


def _family_supported(node: Node) -> bool:
    table = getattr(_memo, "table", None)
    if table is None:
        return _check_family(node)
    answer = table.get(node)
    if answer is None:
        answer = table[node] = _check_family(node)
    return answer


def _check_family(node: Node) -> bool:
    if any(
        getattr(v.type, "dtype", None) in BYTE_DTYPES
        for v in (*node.inputs, *node.outputs)
        if v is not None
    ):
        return False  # the family kernels take none of them: node by node
    check = _lookup(node.attrs.get("kind", "pointwise"), 2)
    return check is not None and bool(check(node))


def _nodes_supported(node: Node, ctx) -> bool:
    """Every node of the body runs on its own in ctx's table (the fallback when the family
    refuses the whole, e.g. a pointwise chain with a Cast to float8)."""
    body = node.attrs.get("body")
    if body is None or len(body.outputs) != 1:
        return False
    return all(
        n.op == "Constant" or (n.op != "Fused" and node_supported(n, ctx)) for n in body.nodes
    )


def fused_supported(node: Node, ctx) -> bool:
    return _family_supported(node) or _nodes_supported(node, ctx)


def _lower_unfused(node: Node, ctx: LoweringContext) -> None:
    body = node.attrs["body"]
    for inner, outer in zip(body.inputs, node.inputs):
        if outer is not None:
            ctx.bind(inner, ctx.input(outer))
    for n in body.nodes:
        if n.op != "Constant":
            ctx.lowerings[n.op](n, ctx)
    ctx.bind(node.outputs[0], ctx.slot_of(body.outputs[0]))


@supports(fused_supported)
def lower_fused(node: Node, ctx: LoweringContext) -> None:
    if not _family_supported(node):
        _lower_unfused(node, ctx)
        return
    kind = node.attrs.get("kind", "pointwise")
    lower = _lookup(kind, 1)
    if lower is None:
        raise LoweringError(
            f"the cpu target cannot lower Fused nodes of kind {kind!r} (node {node.name!r})"
        )
    lower(node, ctx)


# float8 / int4 / ... values may enter or leave a Fused node run node by node; each body
# node is checked by its own lowering
lower_fused.byte_dtypes = True

LOWERINGS = {"Fused": lower_fused}
