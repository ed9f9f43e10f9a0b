# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importer of onnxruntime's com.microsoft GroupQueryAttention (what its GenAI model
builder writes for Llama / Mistral / Phi / Qwen decoders): rotary embedding of Q and K
inside, grouped heads, a key / value cache in BNSH layout, causal attention. It becomes the
IR's RotaryEmbedding and Attention (q_num_heads / kv_num_heads, past_key / past_value,
is_causal with the queries after the cache, left_window_size, softcap).

The cache grows by concatenation: present = past followed by this step's keys / values,
which is onnxruntime's CPU behaviour when every row of the batch has the same cached length
(a batch of one; or a batch of prompts, right-padded, with no cache before them: seqlens_k
then masks each row's padding keys). Query position s of row b is
max(seqlens_k[b] + 1 - S, 0) + s (S the query length), unless position_ids are given.
Refused: a quantized cache (k_scale / v_scale, kv_cache_bit_width), query_seqlens, head_sink,
q_norm_weight / k_norm_weight, smooth_softmax, the qk output."""

from __future__ import annotations

from ...ir import DType, Value
from .context import ImportContext
from .microsoft_common import cast, dims, ints, node, output_wanted, rank, refuse

_REFUSED_INPUTS = {
    11: "head_sink",
    12: "k_scale",
    13: "v_scale",
    14: "q_norm_weight",
    15: "k_norm_weight",
    16: "query_seqlens",
}


def _heads(ctx: ImportContext, name: str) -> int:
    value = ctx.attrs.get(name)
    if not isinstance(value, int) or value <= 0:
        raise refuse(ctx, f"{name} (a positive int) is required")
    return value


def _check_supported(ctx: ImportContext) -> None:
    a = ctx.attrs
    for index, what in _REFUSED_INPUTS.items():
        if ctx.input(index) is not None:
            raise refuse(ctx, f"the {what} input is not imported")
    if int(a.get("kv_cache_bit_width", 0) or 0) or int(a.get("smooth_softmax", 0) or 0):
        raise refuse(ctx, "a quantized cache and smooth_softmax are not imported")
    if int(a.get("qk_output", 0) or 0) or output_wanted(ctx, 3):
        raise refuse(ctx, "the output_qk output is not imported")
    if (ctx.input(3) is None) != (ctx.input(4) is None):
        raise refuse(ctx, "past_key and past_value come together")


def _length(ctx: ImportContext, x: Value, axis: int) -> Value:
    """dims(x)[axis] as an int64 scalar."""
    return ctx.add("Squeeze", ctx.add("Shape", x, start=axis, end=axis + 1), ints(ctx, [0]))


def _query_positions(ctx: ImportContext, query: Value, seqlens_k: Value) -> Value:
    """[batch, S] int64: max(seqlens_k[b] + 1 - S, 0) + s."""
    s = _length(ctx, query, 1)
    one, zero = ctx.constant(1, dtype="int64"), ctx.constant(0, dtype="int64")
    total = ctx.add("Add", cast(ctx, seqlens_k, DType.i64), one)
    start = ctx.add("Max", ctx.add("Sub", total, s), zero)  # [batch]
    steps = ctx.add("Range", zero, s, one)  # [S]
    return ctx.add("Add", ctx.add("Unsqueeze", start, ints(ctx, [1])), steps)


def _key_mask(ctx: ImportContext, query: Value, past_key: Value | None, seqlens_k: Value):
    """[batch, 1, 1, T] bool: key j of row b counts when j <= seqlens_k[b] (T = cached + S)."""
    keys = _length(ctx, query, 1)
    if past_key is not None:
        keys = ctx.add("Add", keys, _length(ctx, past_key, 2))
    zero, one = ctx.constant(0, dtype="int64"), ctx.constant(1, dtype="int64")
    positions = ctx.add("Unsqueeze", ctx.add("Range", zero, keys, one), ints(ctx, [0]))
    last = ctx.add("Unsqueeze", cast(ctx, seqlens_k, DType.i64), ints(ctx, [1]))
    keep = ctx.add("LessOrEqual", positions, last)  # [batch, T]
    return ctx.add("Unsqueeze", keep, ints(ctx, [1, 2]))


def _rotary(ctx: ImportContext, x: Value, heads: int, head: int, positions: Value) -> Value:
    cos, sin = ctx.input(7), ctx.input(8)
    if cos is None or sin is None:
        raise refuse(ctx, "do_rotary needs cos_cache and sin_cache")
    half = (dims(cos) or (None, None))[-1]
    if not isinstance(half, int):
        raise refuse(ctx, "cos_cache needs a static width")
    attrs = {
        "interleaved": int(ctx.attrs.get("rotary_interleaved", 0) or 0),
        "num_heads": heads,
        "rotary_embedding_dim": 0 if 2 * half == head else 2 * half,
    }
    return ctx.add("RotaryEmbedding", x, cos, sin, positions, **attrs)


def group_query_attention(ctx: ImportContext):
    """GroupQueryAttention(query, key?, value?, past_key?, past_value?, seqlens_k,
    total_sequence_length, cos_cache?, sin_cache?, position_ids?, attention_bias?; num_heads,
    kv_num_heads, scale, softcap, local_window_size, do_rotary, rotary_interleaved, causal):
    the module docstring says how."""
    _check_supported(ctx)
    a = ctx.attrs
    q_heads, kv_heads = _heads(ctx, "num_heads"), _heads(ctx, "kv_num_heads")
    query, key, value = ctx.input(0), ctx.input(1), ctx.input(2)
    past_key, past_value, seqlens_k = ctx.input(3), ctx.input(4), ctx.input(5)
    if rank(query) != 3:
        raise refuse(ctx, "query must be 3-D [batch, sequence, hidden]")
    width = dims(query)[2]
    if key is None and value is None:  # packed QKV
        if not isinstance(width, int) or width % (q_heads + 2 * kv_heads):
            raise refuse(ctx, "packed QKV needs a static width of (num_heads + 2 kv_num_heads) D")
        head = width // (q_heads + 2 * kv_heads)
        sizes = [q_heads * head, kv_heads * head, kv_heads * head]
        base = ctx.name or "gqa"
        query, key, value = node(
            ctx, "Split", [query, ints(ctx, sizes)], {"axis": -1}, [f"{base}_{p}" for p in "qkv"]
        )
    elif key is None or value is None or rank(key) != 3 or rank(value) != 3:
        raise refuse(ctx, "key and value: both 3-D, or both absent (packed QKV)")
    elif not isinstance(width, int) or width % q_heads:
        raise refuse(ctx, "query needs a static hidden size, a multiple of num_heads")
    else:
        head = width // q_heads
    if int(a.get("do_rotary", 0) or 0):
        position_ids = ctx.input(9)
        if position_ids is None:
            positions = _query_positions(ctx, query, seqlens_k)
        else:
            positions = cast(ctx, position_ids, DType.i64)
        query = _rotary(ctx, query, q_heads, head, positions)
        key = _rotary(ctx, key, kv_heads, head, positions)
    mask = _key_mask(ctx, query, past_key, seqlens_k)
    bias = ctx.input(10)
    if bias is not None:
        dtype = query.type.dtype if query.type is not None else DType.f32
        lowest = ctx.constant(
            -3.4028234663852886e38 if dtype == DType.f32 else -65504.0, dtype=dtype.numpy
        )
        mask = ctx.add("Where", mask, bias, lowest)
    attrs: dict = {
        "q_num_heads": q_heads,
        "kv_num_heads": kv_heads,
        "is_causal": int(a.get("causal", 1) if a.get("causal") is not None else 1),
    }
    if a.get("scale"):
        attrs["scale"] = float(a["scale"])
    if a.get("softcap"):
        attrs["softcap"] = float(a["softcap"])
    window = int(a.get("local_window_size", -1) if a.get("local_window_size") is not None else -1)
    if window > 0:  # window keys, the query's own included: that many - 1 to its left
        attrs["left_window_size"] = window - 1
    names = [ctx.output_names[i] if i < len(ctx.output_names) else None for i in range(3)]
    inputs = [query, key, value, mask, past_key, past_value]
    outputs = node(
        ctx,
        "Attention",
        inputs,
        attrs,
        [n or f"{ctx.name or 'gqa'}_{i}" for i, n in enumerate(names)],
    )
    return [outputs[0], outputs[1], outputs[2], None]


OPS = {"GroupQueryAttention": group_query_attention}
