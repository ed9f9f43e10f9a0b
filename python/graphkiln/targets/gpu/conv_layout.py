# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Which gpu Conv steps run channels-last (NHWC), and their operand slots.

cuDNN runs float16 / bfloat16 convolutions on tensor cores natively in NHWC; NCHW operands
cost it transposes on every call. When the lowering context's `conv_channels_last` is set
(GpuPlan sets it where cuDNN runs Conv steps; option channels_last, GRAPHKILN_GPU_NHWC=0), a
half-precision 2-D Conv with constant weights, one group, channel counts that are multiples
of 8, a batch of 2 or more, and either a convolution among the readers of its result or its input
already channels-last (the last convolution of a chain: one Copy of its result to plain for
its readers, rather than Copies of its input and residual and cuDNN's own transposes):
  - writes its output channels-last (slot layout CHANNELS_LAST: NCHW dims, NHWC strides);
  - reads its input and residual channels-last (a Copy converts plain data, once per value);
  - reads its weights as a constant KRSC array seen as [K, C, R, S] channels-last.
Readers that need plain data get a Copy from LoweringContext.input, so a chain of convs stays
NHWC and every other kernel still sees NCHW. At batch 1 conv.hip's im2col path (NCHW) is the
faster default (src/gpu/conv_cudnn.hip), so those stay plain."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, Value
from ..native.lower import LoweringContext, static_dims
from ..native.plan import CHANNELS_LAST

HALF = (DType.f16, DType.bf16)


def channels_last_conv(ctx: LoweringContext, conv: Node, out: Value, w: Value) -> bool:
    """Whether `conv` should run channels-last: `out` is its result (the conv's own output,
    or the fused node's), `w` its weights (outside a fused body: the constant)."""
    if not getattr(ctx, "conv_channels_last", False) or ctx.is_graph_output(out):
        return False
    x = conv.inputs[0]
    try:
        x_dims, w_dims, y_dims = static_dims(x), static_dims(w), static_dims(out)
    except Exception:  # noqa: BLE001 - dynamic dims
        return False
    return (
        len(x_dims) == 4
        and x_dims[0] >= 2
        and y_dims[2] * y_dims[3] > 1
        and out.type.dtype in HALF
        and x.type.dtype == out.type.dtype
        and w.constant is not None
        and int(conv.attrs.get("group", 1)) == 1
        and x_dims[1] % 8 == 0
        and w_dims[0] % 8 == 0
        and (
            any(_is_conv(r) for r in ctx.readers.get(out, [])) or ctx.layout_of(x) == CHANNELS_LAST
        )
    )


def _is_conv(node: Node) -> bool:
    return node.op == "Conv" or (node.op == "Fused" and node.attrs.get("kind") == "conv")


def channels_last_weights(ctx: LoweringContext, w: Value) -> int:
    """A constant slot of `w` stored KRSC, seen as [K, C, R, S] channels-last."""
    data = np.asarray(w.constant).astype(w.type.dtype.numpy, copy=False)
    krsc = ctx.constant(np.ascontiguousarray(np.transpose(data, (0, 2, 3, 1))))
    return ctx.alias(None, krsc, data.shape, layout=CHANNELS_LAST)


def conv_slots(ctx: LoweringContext, conv: Node, out: Value, w: Value, residual: Value | None):
    """(x, w, z, y) slots of a channels-last Conv step (z None without a residual)."""
    x = ctx.input_channels_last(conv.inputs[0])
    w = channels_last_weights(ctx, w)
    z = ctx.input_channels_last(residual) if residual is not None else None
    y = ctx.output_channels_last(out)
    return x, w, z, y
