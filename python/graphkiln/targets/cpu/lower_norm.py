# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""RMSNormalization -> kernel "RMSNormalization" (src/cpu/rms_norm.cpp): float32, stash
type float32, over dims[axis:]; a Scale smaller than those dims must be a constant (it is
broadcast here). GroupNormalization / InstanceNormalization -> kernel "GroupNormalization"
and BatchNormalization in inference mode -> kernel "BatchNormalization"
(src/cpu/group_norm.cpp): float32 (N, C, ...) data, per-channel parameters of C values."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from ..native.lower import LoweringContext, static_dims
from ..native.lower_support import supports


def _dtype(v):
    return None if v is None else getattr(v.type, "dtype", None)


def _tail(node: Node) -> tuple[int, ...]:
    dims = tuple(node.inputs[0].type.dims)
    axis = int(node.attrs.get("axis", -1)) % len(dims)
    return dims[axis:]


def _rms_ok(node: Node, ctx=None) -> bool:
    x, scale = node.inputs[0], node.inputs[1]
    if len(x.type.dims) == 0 or node.attrs.get("stash_type", 1) != 1:
        return False
    if {_dtype(x), _dtype(scale), _dtype(node.outputs[0])} != {DType.f32}:
        return False
    tail = _tail(node)
    s_dims = tuple(scale.type.dims)
    if s_dims == tail:
        return True
    if scale.constant is None:
        return False
    try:
        np.broadcast_shapes(s_dims, tail)
    except ValueError:
        return False
    return np.broadcast_shapes(s_dims, tail) == tail


@supports(_rms_ok)
def lower_rms_norm(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    axis = int(node.attrs.get("axis", -1)) % len(dims)
    tail = dims[axis:]
    scale = node.inputs[1]
    if tuple(scale.type.dims) == tail:
        scale_slot = ctx.input(scale)
    else:
        full = np.broadcast_to(np.asarray(scale.constant, np.float32), tail)
        scale_slot = ctx.constant(np.ascontiguousarray(full))
    ctx.emit(
        "RMSNormalization",
        [ctx.input(node.inputs[0]), scale_slot],
        [ctx.output(node.outputs[0])],
        {"axis": axis, "epsilon": float(node.attrs.get("epsilon", 1e-5))},
        node.name,
    )


def _channels(node: Node) -> int | None:
    dims = node.inputs[0].type.dims
    return dims[1] if len(dims) >= 2 else None


def _per_channel_ok(node: Node, params) -> bool:
    c = _channels(node)
    if c is None or _dtype(node.inputs[0]) != DType.f32 or _dtype(node.outputs[0]) != DType.f32:
        return False
    for v in params:
        if v is None or _dtype(v) != DType.f32 or int(np.prod(v.type.dims, dtype=np.int64)) != c:
            return False
    return True


def _group_ok(node: Node, ctx=None) -> bool:
    if node.op == "GroupNormalization":
        groups = int(node.attrs.get("num_groups") or 0)
        c = _channels(node)
        if node.attrs.get("stash_type", 1) != 1 or groups <= 0 or c is None or c % groups:
            return False
    return _per_channel_ok(node, node.inputs[1:3])


@supports(_group_ok)
def lower_group_norm(node: Node, ctx: LoweringContext) -> None:
    dims = static_dims(node.inputs[0])
    groups = int(node.attrs["num_groups"]) if node.op == "GroupNormalization" else dims[1]
    ctx.emit(
        "GroupNormalization",
        [ctx.input(v) for v in node.inputs[:3]],
        [ctx.output(node.outputs[0])],
        {"groups": groups, "epsilon": float(node.attrs.get("epsilon", 1e-5))},
        node.name,
    )


def _batch_ok(node: Node, ctx=None) -> bool:
    if node.attrs.get("training_mode", 0) or any(o is not None for o in node.outputs[1:]):
        return False
    return len(node.inputs) == 5 and _per_channel_ok(node, node.inputs[1:5])


@supports(_batch_ok)
def lower_batch_norm(node: Node, ctx: LoweringContext) -> None:
    ctx.emit(
        "BatchNormalization",
        [ctx.input(v) for v in node.inputs[:5]],
        [ctx.output(node.outputs[0])],
        {"epsilon": float(node.attrs.get("epsilon", 1e-5))},
        node.name,
    )


LOWERINGS = {
    "RMSNormalization": lower_rms_norm,
    "GroupNormalization": lower_group_norm,
    "InstanceNormalization": lower_group_norm,
    "BatchNormalization": lower_batch_norm,
}
