# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fused conv bodies whose epilogue the Conv step itself takes (src/gpu/conv_cudnn.hip).

A Fused node of kind "conv" whose body is exactly Conv -> Relu, Conv -> Add(residual) or
Conv -> Add(residual) -> Relu becomes one Conv step: attribute activation="relu" when the body
ends in Relu, and the residual as input 3 (z), so the step computes
y = relu(conv(x, w) + bias + z). On NVIDIA builds cuDNN runs that as one fused call (with a
ReLU); every other build runs conv.hip's kernel and a small epilogue kernel, so the plan means
the same everywhere. Any other body (other epilogue ops, a Cast, a residual that broadcasts or
has another type, an intermediate value read twice) is left to the generic lowering
(lower_pointwise.lower_fused)."""

from __future__ import annotations

from ...ir import Node, Value
from ..native.lower import LoweringContext, static_dims
from .conv_layout import channels_last_conv, conv_slots
from .lower_linalg import _as_2d, _window


def _epilogue(body) -> tuple[Node, Value | None, bool] | None:
    """(the Conv node, the residual value or None, whether a Relu ends it), or None."""
    nodes = [n for n in body.nodes if n.op != "Constant"]
    if len(body.outputs) != 1 or not nodes or nodes[0].op != "Conv" or len(nodes) > 3:
        return None
    conv, rest = nodes[0], nodes[1:]
    ops = [n.op for n in rest]
    if ops not in (["Relu"], ["Add"], ["Add", "Relu"]):
        return None
    current = conv.outputs[0]
    residual = None
    for n in rest:
        if n.op == "Add":
            if len(n.inputs) != 2 or current not in n.inputs or n.inputs[0] is n.inputs[1]:
                return None
            residual = n.inputs[1] if n.inputs[0] is current else n.inputs[0]
        elif n.inputs[0] is not current:
            return None
        current = n.outputs[0]
    if current is not body.outputs[0]:
        return None
    # every intermediate value is read once, by the next node only
    readers = [v for n in nodes for v in n.inputs]
    for n in nodes[:-1]:
        if readers.count(n.outputs[0]) != 1 or n.outputs[0] in body.outputs:
            return None
    if residual is not None and not _same_tensor_type(residual, conv.outputs[0]):
        return None
    if any(n.outputs[0].type.dtype != conv.outputs[0].type.dtype for n in rest):
        return None
    return conv, residual, ops[-1] == "Relu"


def _same_tensor_type(a: Value, b: Value) -> bool:
    try:
        return a.type.dtype == b.type.dtype and static_dims(a) == static_dims(b)
    except Exception:  # noqa: BLE001 - dynamic dims: leave it to the generic lowering
        return False


def lower_conv_with_epilogue(node: Node, ctx: LoweringContext) -> bool:
    """Lower a Fused conv node as one Conv step with its epilogue; False when it does not fit
    (nothing emitted then). The body's inputs must already be bound to the node's slots."""
    if node.attrs.get("kind") != "conv":
        return False
    found = _epilogue(node.attrs["body"])
    if found is None:
        return False
    conv, residual, relu = found
    from .lower_linalg import lower_conv

    if not lower_conv.supports(conv, ctx):
        return False
    x_dims, w_dims = static_dims(conv.inputs[0]), static_dims(conv.inputs[1])
    y_dims = static_dims(conv.outputs[0])
    kernel, strides, dilations, pads = _window(conv, x_dims, y_dims, list(w_dims[2:]))
    bias = conv.inputs[2] if len(conv.inputs) > 2 else None
    body = node.attrs["body"]
    weights = dict(zip(body.inputs, node.inputs)).get(conv.inputs[1], conv.inputs[1])
    if channels_last_conv(ctx, conv, node.outputs[0], weights):
        x, w, z, y = conv_slots(ctx, conv, node.outputs[0], weights, residual)
    else:
        x = _as_2d(ctx, ctx.input(conv.inputs[0]), x_dims)
        w = _as_2d(ctx, ctx.input(conv.inputs[1]), w_dims)
        z = _as_2d(ctx, ctx.input(residual), y_dims) if residual is not None else None
        y = _as_2d(ctx, ctx.output(node.outputs[0]), y_dims)
    attrs = {
        "group": int(conv.attrs.get("group", 1)),
        "strides": strides,
        "pads": pads,
        "dilations": dilations,
    }
    if relu:
        attrs["activation"] = "relu"
    inputs = [x, w, ctx.input(bias) if bias is not None else None]
    if z is not None:
        inputs.append(z)
    ctx.emit("Conv", inputs, [y], attrs, node.name)
    return True
