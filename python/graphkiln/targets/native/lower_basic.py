# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Lowerings that move no data or only copy it: views (Reshape, Flatten, Squeeze,
Unsqueeze, Identity share their input's bytes), Dropout in inference, and the direct
lowering most ops use (kernel named after the op, IR attributes as kernel attributes)."""

from __future__ import annotations

from ...ir import Node
from .lower import LoweringContext, plain_attrs, static_dims


def lower_view(node: Node, ctx: LoweringContext) -> None:
    src = ctx.input(node.inputs[0])
    out = node.outputs[0]
    if ctx.is_graph_output(out):
        view = ctx.alias(None, src, static_dims(out))
        ctx.emit("Copy", [view], [ctx.output(out)], {}, node.name)
    else:
        ctx.alias(out, src)


def lower_direct(node: Node, ctx: LoweringContext, layouts=None) -> None:
    """Kernel `node.op`: plain inputs and outputs, the node's attributes as they are."""
    inputs = [ctx.input(v) for v in node.inputs]
    outputs = [ctx.output(v) for v in node.outputs if v is not None]
    if len(outputs) != sum(v is not None for v in node.outputs):
        raise AssertionError("unreachable")
    ctx.emit(node.op, inputs, outputs, plain_attrs(node), node.name)


LOWERINGS = {
    "Reshape": lower_view,
    "Flatten": lower_view,
    "Squeeze": lower_view,
    "Unsqueeze": lower_view,
    "Identity": lower_view,
}
