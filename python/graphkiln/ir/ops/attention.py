# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of attention blocks: Attention, RotaryEmbedding, LinearAttention, SwiGLU."""

from ..schema import REQUIRED, define
from ..types import TensorType, fresh_dim
from .. import infer


def _mul(a, b):
    return a * b if isinstance(a, int) and isinstance(b, int) else fresh_dim()


def _div(a, b):
    return a // b if isinstance(a, int) and isinstance(b, int) and b else fresh_dim()


def _add(a, b):
    return a + b if isinstance(a, int) and isinstance(b, int) else fresh_dim()


def _attention(ctx):
    q, k, v = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2)
    unknown = [
        infer.unknown(q.dtype, q.rank),
        infer.unknown(k.dtype, 4),
        infer.unknown(v.dtype, 4),
        infer.unknown(q.dtype, 4),
    ]
    if q.dims is None or k.dims is None or v.dims is None:
        return unknown
    a = ctx.attrs
    if len(q.dims) == 3:
        q_heads, kv_heads = a["q_num_heads"], a["kv_num_heads"]
        if q_heads is None or kv_heads is None:
            return unknown
        batch, q_seq = q.dims[0], q.dims[1]
        head, kv_seq = _div(k.dims[2], kv_heads), k.dims[1]
        v_head = _div(v.dims[2], kv_heads)
        y: tuple = (batch, q_seq, _mul(q_heads, v_head))
    else:
        batch, q_heads, q_seq = q.dims[0], q.dims[1], q.dims[2]
        kv_heads, kv_seq, head, v_head = k.dims[1], k.dims[2], k.dims[3], v.dims[3]
        y = (batch, q_heads, q_seq, v_head)
    past = ctx.type(4)
    total = kv_seq
    if isinstance(past, TensorType):
        total = _add(past.dims[2], kv_seq) if past.dims is not None else fresh_dim()
    return [
        TensorType(q.dtype, y),
        TensorType(k.dtype, (batch, kv_heads, total, head)),
        TensorType(v.dtype, (batch, kv_heads, total, v_head)),
        TensorType(q.dtype, (batch, q_heads, q_seq, total)),
    ]


# The IR form is opset 25's: nonpad_kv_seqlen (24) and the sliding window (25).
define(
    "Attention",
    ("Q", "K", "V", "attn_mask?", "past_key?", "past_value?", "nonpad_kv_seqlen?"),
    ("Y", "present_key?", "present_value?", "qk_matmul_output?"),
    [
        ("is_causal", "int", 0),
        ("kv_num_heads", "int", None),
        ("q_num_heads", "int", None),
        ("qk_matmul_output_mode", "int", 0),
        ("scale", "float", None),
        ("softcap", "float", 0.0),
        ("softmax_precision", "int", None),
        ("left_window_size", "int", -1),
        ("right_window_size", "int", -1),
    ],
    _attention,
    traits=("half_anchor",),
)

define(
    "RotaryEmbedding",
    ("X", "cos_cache", "sin_cache", "position_ids?"),
    ("Y",),
    [("interleaved", "int", 0), ("num_heads", "int", None), ("rotary_embedding_dim", "int", 0)],
    infer.same_as(0),
)

define("SwiGLU", ("A", "B"), ("Y",), [("alpha", "float", 1.0)], infer.same_as(0))


def _linear_attention(ctx):
    q, k, v = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2)
    a = ctx.attrs
    if q.dims is None or k.dims is None or v.dims is None or len(q.dims) != 3:
        return [infer.unknown(q.dtype, 3), infer.unknown(q.dtype, 4)]
    q_heads, kv_heads = a["q_num_heads"], a["kv_num_heads"]
    v_head = _div(v.dims[2], kv_heads)
    state = ctx.type(3)
    state_dtype = state.dtype if isinstance(state, TensorType) else q.dtype
    return [
        TensorType(q.dtype, (q.dims[0], q.dims[1], _mul(q_heads, v_head))),
        TensorType(state_dtype, (q.dims[0], kv_heads, _div(k.dims[2], kv_heads), v_head)),
    ]


define(
    "LinearAttention",
    ("query", "key", "value", "past_state?", "decay?", "beta?"),
    ("output", "present_state"),
    [
        ("chunk_size", "int", 64),
        ("kv_num_heads", "int", REQUIRED),
        ("q_num_heads", "int", REQUIRED),
        ("scale", "float", 0.0),
        ("update_rule", "str", "gated_delta"),
    ],
    _linear_attention,
)
