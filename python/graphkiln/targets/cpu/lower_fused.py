# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`Fused` nodes: one IR op whose lowering depends on attrs["kind"] — a pointwise chain,
a reduction with its prologue / epilogue, or a convolution / GEMM / MatMul with its
epilogue (those in lower_conv.py and lower_matmul.py, imported when needed)."""

from __future__ import annotations

import importlib

from ...ir import Node
from .lower import LoweringContext, LoweringError
from .lower_support import supports


def _family(kind: str):
    """(module name, lowering name, predicate name) for a fused kind."""
    if kind == "pointwise":
        return "lower_pointwise", "lower_fused_pointwise", "fused_pointwise_supported"
    if kind == "reduce":
        return "lower_reduce", "lower_fused_reduce", "fused_reduce_supported"
    if kind == "conv":
        return "lower_conv", "lower_fused_conv", "fused_conv_supported"
    if kind in ("gemm", "matmul"):
        return "lower_matmul", "lower_fused_matmul", "fused_matmul_supported"
    return None


def _lookup(kind: str, index: int):
    family = _family(kind)
    if family is None:
        return None
    try:
        module = importlib.import_module(f"{__package__}.{family[0]}")
    except ImportError:
        return None
    return getattr(module, family[index], None)


def fused_supported(node: Node) -> bool:
    check = _lookup(node.attrs.get("kind", "pointwise"), 2)
    if check is None:
        return False
    return bool(check(node))


@supports(fused_supported)
def lower_fused(node: Node, ctx: LoweringContext) -> None:
    kind = node.attrs.get("kind", "pointwise")
    lower = _lookup(kind, 1)
    if lower is None:
        raise LoweringError(f"the cpu target cannot lower Fused nodes of kind {kind!r} "
                            f"(node {node.name!r})")
    lower(node, ctx)


LOWERINGS = {"Fused": lower_fused}
