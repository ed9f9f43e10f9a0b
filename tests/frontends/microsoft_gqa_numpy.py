# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy version of com.microsoft GroupQueryAttention, written from the ContribOperators
documentation, for the cases of microsoft_gqa_models.py: rotary embedding of Q and K at
positions past + s (past: seqlens_k + 1 - S, at least 0), the cache concatenated with this
step's keys / values (BNSH), each query head h reading key / value head h // (num_heads /
kv_num_heads), scores scaled by 1 / sqrt(head) (or `scale`), softcap, a causal mask with the
queries after the cache, a sliding window of local_window_size keys (the query's own
included), and keys past seqlens_k[b] masked."""

from __future__ import annotations

import numpy as np


def _rotate(x, cos, sin, positions, interleaved):
    """x [B, S, H, D] rotated at positions [B, S] (the whole head)."""
    c = cos[positions][:, :, None, :].astype(np.float64)  # [B, S, 1, D/2]
    s = sin[positions][:, :, None, :].astype(np.float64)
    x = x.astype(np.float64)
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x1 * c - x2 * s
        out[..., 1::2] = x2 * c + x1 * s
        return out
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def group_query_attention(feeds, consts, attrs):
    q_heads, kv_heads = attrs["num_heads"], attrs["kv_num_heads"]
    query = feeds["query"]
    batch, seq, width = query.shape
    if "key" in feeds:
        head = width // q_heads
        key, value = feeds["key"], feeds["value"]
    else:
        head = width // (q_heads + 2 * kv_heads)
        query, key, value = np.split(query, [q_heads * head, (q_heads + kv_heads) * head], axis=-1)
    q = query.reshape(batch, seq, q_heads, head).astype(np.float64)
    k = key.reshape(batch, seq, kv_heads, head).astype(np.float64)
    v = value.reshape(batch, seq, kv_heads, head).astype(np.float64)
    seqlens = feeds["seqlens_k"].astype(np.int64)
    start = np.maximum(seqlens + 1 - seq, 0)
    positions = start[:, None] + np.arange(seq)[None, :]
    if attrs.get("do_rotary", 0):
        interleaved = attrs.get("rotary_interleaved", 0)
        q = _rotate(q, consts["cos"], consts["sin"], positions, interleaved)
        k = _rotate(k, consts["cos"], consts["sin"], positions, interleaved)
    k, v, q = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3), q.transpose(0, 2, 1, 3)
    past_k = feeds.get("past_key", np.zeros((batch, kv_heads, 0, head), np.float32))
    past_v = feeds.get("past_value", np.zeros((batch, kv_heads, 0, head), np.float32))
    present_k = np.concatenate([past_k.astype(np.float64), k], axis=2)
    present_v = np.concatenate([past_v.astype(np.float64), v], axis=2)
    past, total = past_k.shape[2], past_k.shape[2] + seq
    group = q_heads // kv_heads
    keys = np.repeat(present_k, group, axis=1)
    values = np.repeat(present_v, group, axis=1)
    scale = attrs.get("scale") or 1.0 / np.sqrt(head)
    scores = q @ keys.transpose(0, 1, 3, 2) * scale  # [B, Hq, S, T]
    softcap = attrs.get("softcap", 0.0)
    if softcap:
        scores = softcap * np.tanh(scores / softcap)
    query_at = past + np.arange(seq)[:, None]
    key_at = np.arange(total)[None, :]
    allowed = key_at <= query_at  # causal
    window = attrs.get("local_window_size", -1)
    if window > 0:
        allowed = allowed & (key_at > query_at - window)
    allowed = allowed[None, None] & (key_at[None, None] <= seqlens[:, None, None, None])
    scores = np.where(allowed, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    out = (weights @ values).transpose(0, 2, 1, 3).reshape(batch, seq, q_heads * head)
    return [out.astype(np.float32), present_k.astype(np.float32), present_v.astype(np.float32)]


EXPECTED_GQA = {
    name: group_query_attention
    for name in (
        "gqa_prompt_batch2",
        "gqa_decode",
        "gqa_decode_batch2",
        "gqa_chunk_after_cache",
        "gqa_packed_qkv",
        "gqa_sliding_window",
        "gqa_softcap",
        "gqa_rotary_interleaved",
        "gqa_no_rotary",
        "gqa_no_cache",
    )
}
