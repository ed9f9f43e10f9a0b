# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""InstanceNormalization and GroupNormalization on the gpu target, from kernels it has: the
(N, C, ...) input seen as N * groups rows of (C / groups) * spatial values is normalized by
one `LayerNormalization` step (scale a constant row of ones, no bias; float32 statistics),
then one `Pointwise` step applies the per-channel scale and bias broadcast over the spatial
dims (y = normalized * scale[c] + bias[c]). InstanceNormalization is the case of one group
per channel. float32, float16, bfloat16 (every tensor of the node in one type); per-channel
parameters of C values (opset 21 GroupNormalization; the importer maps opset 18's per-group
ones to per-channel)."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, TensorType, Value
from ..native.lower import LoweringContext, node_label, static_dims
from .pointwise_steps import emit_program

FLOATS = (DType.f32, DType.f16, DType.bf16)


def _groups(node: Node, channels: int) -> int:
    if node.op == "InstanceNormalization":
        return channels
    return int(node.attrs.get("num_groups") or 0)


def _norm_ok(node: Node, ctx=None) -> bool:
    x = node.inputs[0]
    dims = static_dims(x)
    if len(dims) < 2 or len(node.inputs) < 3:
        return False
    values = [x, node.inputs[1], node.inputs[2], node.outputs[0]]
    if any(v is None for v in values) or {v.type.dtype for v in values} - {x.type.dtype}:
        return False
    if x.type.dtype not in FLOATS:
        return False
    channels = dims[1]
    groups = _groups(node, channels)
    if groups <= 0 or channels % groups:
        return False
    if node.op == "GroupNormalization" and node.attrs.get("stash_type", 1) != 1:
        return False
    return all(int(np.prod(static_dims(v), dtype=np.int64)) == channels for v in node.inputs[1:3])


def lower_group_norm(node: Node, ctx: LoweringContext) -> None:
    x = node.inputs[0]
    dims = static_dims(x)
    dtype = x.type.dtype
    channels = dims[1]
    groups = _groups(node, channels)
    length = (channels // groups) * int(np.prod(dims[2:], dtype=np.int64))
    name = node_label(node)
    normalized = Value(f"{name}/normalized", TensorType(dtype, dims))
    ctx.bind(normalized, ctx.temp(dtype, dims))
    ones = ctx.constant(np.ones(length, dtype.numpy))
    ctx.emit(
        "LayerNormalization",
        [ctx.input(x), ones, None],
        [ctx.slot_of(normalized)],
        {
            "rows": dims[0] * groups,
            "len": length,
            "epsilon": float(node.attrs.get("epsilon", 1e-5)),
        },
        f"{node.name}/normalize",
    )
    per_channel = (channels,) + (1,) * (len(dims) - 2)
    params = []
    for role, v in (("scale", node.inputs[1]), ("bias", node.inputs[2])):
        view = Value(f"{name}/{role}", TensorType(dtype, per_channel))
        ctx.bind(view, ctx.alias(None, ctx.input(v), per_channel))
        params.append(view)
    scaled = Value(f"{name}/scaled", TensorType(dtype, dims))
    nodes = [
        Node("Mul", [normalized, params[0]], [scaled], {}, f"{name}/scale"),
        Node("Add", [scaled, params[1]], [node.outputs[0]], {}, f"{name}/bias"),
    ]
    emit_program(nodes, node.outputs[0], ctx, f"{node.name}/affine")


lower_group_norm.supports = _norm_ok

LOWERINGS = {
    "GroupNormalization": lower_group_norm,
    "InstanceNormalization": lower_group_norm,
}
