# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of normalizations: BatchNormalization, LayerNormalization, InstanceNormalization,
GroupNormalization, RMSNormalization, LRN, MeanVarianceNormalization, LpNormalization."""

import numpy as np

from ...errors import ModelError
from .context import ImportContext


def batch_norm_7(ctx: ImportContext):
    # Before opset 14 training was signalled by asking for the statistics outputs; `spatial=0`
    # (per-element statistics) needs no flag here: the kernel follows the statistics' shape.
    attrs = {k: v for k, v in ctx.attrs.items() if k in ("epsilon", "momentum")}
    training = any(ctx.output_names[1:])
    if training:
        attrs["training_mode"] = 1
    # the IR form has at most 3 outputs (no saved_mean / saved_var); keep the ONNX names
    names = ctx.output_names[:3] if training else ctx.output_names[:1]
    node = ctx.graph.add_node(
        "BatchNormalization", ctx.inputs, attrs, output_names=names, name=ctx.name
    )
    return node.outputs


def group_norm_18(ctx: ImportContext):
    # Opset 18 scales and shifts per group; the IR form (opset 21) does it per channel, so each
    # group's value is repeated over the group's channels.
    x, scale, bias = ctx.inputs
    groups = ctx.attrs["num_groups"]
    dims = x.type.dims if x.type is not None else None
    channels = dims[1] if dims is not None and len(dims) > 1 else None
    if not isinstance(channels, int):
        raise ModelError("GroupNormalization before opset 21 needs a known channel count")
    per_group = channels // groups
    per_channel = []
    for value in (scale, bias):
        data = value.constant
        if data is not None:
            per_channel.append(ctx.constant(np.repeat(data.reshape(-1), per_group)))
            continue
        column = ctx.add("Reshape", value, ctx.constant(np.array([groups, 1], dtype=np.int64)))
        spread = ctx.add(
            "Expand", column, ctx.constant(np.array([groups, per_group], dtype=np.int64))
        )
        per_channel.append(
            ctx.add("Reshape", spread, ctx.constant(np.array([channels], dtype=np.int64)))
        )
    return ctx.emit(inputs=[x, *per_channel])


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "BatchNormalization": [(7, batch_norm_7), (14, None)],
    "InstanceNormalization": (7, None),
    "LayerNormalization": (17, None),
    "GroupNormalization": [(18, group_norm_18), (21, None)],
    "RMSNormalization": (23, None),
    "LRN": (7, None),
    "MeanVarianceNormalization": (9, None),
    "LpNormalization": (7, None),
}
