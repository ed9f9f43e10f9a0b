# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Attention on the gpu target: Q, K, V (float32, float16 or bfloat16, one type for them and
the outputs) in [B, S, H*D] or [B, H, S, D] form, an optional bool or float mask, causal or
not, soft cap, sliding window, grouped-query heads, past key / value (concatenated here into
present_key / present_value, which the kernel then reads) and the qk_matmul_output stages.
The kernels compute scores, softmax and P V in float32 and round the output once
(src/gpu/attention.hip, attention_flash.hip). Not supported:
nonpad_kv_seqlen and a softmax_precision other than float. Each operand is described to the
kernel by (batch, head, row) strides."""

from __future__ import annotations

import math

from ...ir import DType, Node
from ..native.lower import LoweringContext, static_dims
from .lower_tensor import _strides, emit_copy


def _layout(dims, heads):
    """(batch, heads, seq, features) and (batch, head, row) strides of an operand."""
    if len(dims) == 4:
        b, h, s, d = dims
        return (b, h, s, d), [h * s * d, s * d, d]
    b, s, hd = dims
    d = hd // heads
    return (b, heads, s, d), [s * hd, d, hd]


def _present(ctx: LoweringContext, node: Node, past, new, heads, out_value, name):
    """A [B, H, P+T, D] slot holding past then `new` along the sequence."""
    (b, h, t, d), strides = _layout(static_dims(new), heads)
    p = static_dims(past)[2] if past is not None else 0
    dims = (b, h, p + t, d)
    slot = ctx.output(out_value) if out_value is not None else ctx.temp(new.type.dtype, dims)
    dst = _strides(dims)
    if past is not None:
        emit_copy(
            ctx,
            ctx.input(past),
            slot,
            static_dims(past),
            _strides(static_dims(past)),
            dst,
            name=f"{name}/past",
        )
    emit_copy(
        ctx,
        ctx.input(new),
        slot,
        (b, h, t, d),
        [*strides, 1],
        dst,
        dst_offset=p * d,
        name=f"{name}/new",
    )
    return slot, [h * (p + t) * d, (p + t) * d, d], p + t, p


def lower_attention(node: Node, ctx: LoweringContext) -> None:
    q, k, v = node.inputs[:3]
    extra = list(node.inputs[3:]) + [None] * (6 - len(node.inputs))
    mask, past_k, past_v = extra[0], extra[1], extra[2]
    outs = list(node.outputs) + [None] * (4 - len(node.outputs))
    qh = node.attrs.get("q_num_heads")
    kh = node.attrs.get("kv_num_heads")
    (batch, heads, q_seq, head_dim), q_strides = _layout(static_dims(q), qh)
    (_, kv_heads, kv_seq, _), k_strides = _layout(static_dims(k), kh)
    (_, _, _, v_dim), v_strides = _layout(static_dims(v), kh)
    _, y_strides = _layout(static_dims(node.outputs[0]), qh)
    scale = node.attrs.get("scale")
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(head_dim)
    k_slot, v_slot, offset = ctx.input(k), ctx.input(v), 0
    if past_k is not None or outs[1] is not None or outs[2] is not None:
        k_slot, k_strides, kv_seq, offset = _present(
            ctx, node, past_k, k, kh, outs[1], f"{node.name}/present_key"
        )
        v_slot, v_strides, _, _ = _present(
            ctx, node, past_v, v, kh, outs[2], f"{node.name}/present_value"
        )
    inputs = [ctx.input(q), k_slot, v_slot, ctx.input(mask) if mask is not None else None]
    outputs = [ctx.output(node.outputs[0])]
    if outs[3] is not None:
        outputs.append(ctx.output(outs[3]))
    ctx.emit(
        "Attention",
        inputs,
        outputs,
        {
            "batch": batch,
            "heads": heads,
            "kv_heads": kv_heads,
            "q_seq": q_seq,
            "kv_seq": kv_seq,
            "head_dim": head_dim,
            "v_dim": v_dim,
            "q_strides": q_strides,
            "k_strides": k_strides,
            "v_strides": v_strides,
            "y_strides": y_strides,
            "scale": scale,
            "is_causal": int(node.attrs.get("is_causal", 0)),
            "offset": offset,
            "softcap": float(node.attrs.get("softcap") or 0.0),
            "left_window": int(_window(node, "left_window_size")),
            "right_window": int(_window(node, "right_window_size")),
            "qk_mode": int(node.attrs.get("qk_matmul_output_mode") or 0),
        },
        node.name,
    )


def _window(node: Node, name: str) -> int:
    value = node.attrs.get(name)
    return -1 if value is None else int(value)


def _supported(node: Node, ctx=None) -> bool:
    a = node.attrs
    if len(node.inputs) > 6 and node.inputs[6] is not None:
        return False
    if a.get("softmax_precision") not in (None, 1):
        return False
    if (a.get("qk_matmul_output_mode") or 0) not in (0, 1, 2, 3):
        return False
    values = [v for v in (*node.inputs, *node.outputs) if v is not None]
    mask = node.inputs[3] if len(node.inputs) > 3 else None
    if len({v.type.dtype for v in values if v is not mask}) != 1:
        return False
    if any(v.type.dtype not in _FLOATS for v in values if v is not mask):
        return False
    if mask is not None and mask.type.dtype not in (*_FLOATS, DType.bool):
        return False
    q, k = static_dims(node.inputs[0]), static_dims(node.inputs[1])
    qh = q[1] if len(q) == 4 else a.get("q_num_heads")
    kh = k[1] if len(k) == 4 else a.get("kv_num_heads")
    return qh is not None and kh is not None and kh > 0 and qh % kh == 0


_FLOATS = (DType.f32, DType.f16, DType.bf16)

lower_attention.supports = _supported

LOWERINGS = {"Attention": lower_attention}
