# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Lowerings that move no data or only copy it: views (Reshape, Flatten, Squeeze,
Unsqueeze, Identity share their input's bytes; BitCast reads them as another type of the
same width), Dropout in inference (its output a view, its mask all true), and the direct
lowering most ops use (kernel named after the op, IR attributes as kernel attributes)."""

from __future__ import annotations

import numpy as np

from ...ir import Node
from .kernel_contracts import TABLE as KERNEL_CONTRACTS
from .lower import LoweringContext, plain_attrs, static_dims
from .lower_support import supports


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


def _constant_value(value):
    return None if value is None or value.constant is None else np.asarray(value.constant)


def dropout_is_identity(node: Node, ctx) -> bool:
    """Inference (training_mode absent or false) or a ratio of 0: Y is X and the mask all
    true. The mask is written by a Fill, which the target must have."""
    inputs = list(node.inputs) + [None, None]
    ratio, training = inputs[1], inputs[2]
    mode = _constant_value(training)
    if training is not None and mode is None:
        return False  # decided at run time
    if mode is not None and bool(mode.reshape(-1)[0]):
        r = _constant_value(ratio)
        if ratio is not None and (r is None or float(r.reshape(-1)[0]) != 0.0):
            return False  # a random mask: no kernel draws one
    has_mask = len(node.outputs) > 1 and node.outputs[1] is not None
    return not has_mask or ctx.target in KERNEL_CONTRACTS["Fill"]


@supports(dropout_is_identity)
def lower_dropout(node: Node, ctx: LoweringContext) -> None:
    lower_view(node, ctx)
    if len(node.outputs) > 1 and node.outputs[1] is not None:
        ctx.emit("Fill", [], [ctx.output(node.outputs[1])], {"bits": 1}, node.name + "/mask")


def lower_bitcast(node: Node, ctx: LoweringContext) -> None:
    """The input's bytes read as the output's type (the schema keeps the bit width)."""
    src = ctx.input(node.inputs[0])
    out = node.outputs[0]
    if ctx.is_graph_output(out):
        view = ctx.alias(None, src, static_dims(out))
        ctx.plan.slots[view].dtype = out.type.dtype
        ctx.emit("Copy", [view], [ctx.output(out)], {}, node.name)
    else:
        ctx.alias(out, src)


LOWERINGS = {
    "BitCast": lower_bitcast,
    "Dropout": lower_dropout,
    "Reshape": lower_view,
    "Flatten": lower_view,
    "Squeeze": lower_view,
    "Unsqueeze": lower_view,
    "Identity": lower_view,
}
