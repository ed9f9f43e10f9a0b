# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of attention blocks: Attention, RotaryEmbedding, LinearAttention, SwiGLU."""

import ml_dtypes
import numpy as np

# softmax_precision codes (ONNX TensorProto element types) the Attention op accepts
_SOFTMAX_DTYPES = {1: np.float32, 10: np.float16, 11: np.float64, 16: ml_dtypes.bfloat16}


def _work_dtype(dtype):
    return np.float64 if dtype == np.float64 else np.float32


def _heads(x, num_heads):
    """[B, S, H*D] -> [B, H, S, D]; 4-D inputs are already in that form."""
    if x.ndim == 4:
        return x
    batch, seq, hidden = x.shape
    return x.reshape(batch, seq, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)


def _softmax_rows(scores):
    """Softmax over the last axis where a row with no finite score gives zeros, not NaN."""
    top = np.max(scores, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    e = np.exp(scores - top)
    total = np.sum(e, axis=-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1), 0)


def _allowed_keys(q_seq, total, offset, is_causal, left, right, nonpad):
    """[B or 1, 1, Sq, T] boolean: which keys each query may attend (causal frontier,
    sliding window and padding), with query i at absolute position offset + i."""
    pos = np.arange(q_seq)[:, None] + np.asarray(offset).reshape(-1, 1, 1, 1)
    key = np.arange(total)[None, :]
    allowed = np.ones(pos.shape[:-1] + (total,), bool)
    if is_causal:
        allowed &= key <= pos
    if left is not None and left >= 0:
        allowed &= key >= pos - left
    if right is not None and right >= 0:
        allowed &= key <= pos + right
    if nonpad is not None:
        allowed &= key < np.asarray(nonpad).reshape(-1, 1, 1, 1)
    return allowed


def Attention(
    q,
    k,
    v,
    attn_mask=None,
    past_key=None,
    past_value=None,
    nonpad_kv_seqlen=None,
    *,
    is_causal=0,
    kv_num_heads=None,
    q_num_heads=None,
    qk_matmul_output_mode=0,
    scale=None,
    softcap=0.0,
    softmax_precision=None,
    left_window_size=-1,
    right_window_size=-1,
):
    # computed in float32 (float64 for float64) and rounded once to T1 at the end
    work = _work_dtype(q.dtype)
    q4, k4, v4 = _heads(q, q_num_heads), _heads(k, kv_num_heads), _heads(v, kv_num_heads)
    present_k = k4 if past_key is None else np.concatenate([past_key, k4], axis=2)
    present_v = v4 if past_value is None else np.concatenate([past_value, v4], axis=2)
    batch, q_heads, q_seq, head = q4.shape
    total = present_k.shape[2]
    group = q_heads // present_k.shape[1]  # query head h reads key/value head h // group
    keys = np.repeat(present_k.astype(work), group, axis=1)
    values = np.repeat(present_v.astype(work), group, axis=1)
    root = np.sqrt(scale if scale is not None else 1.0 / np.sqrt(head)).astype(work)
    scores = (q4.astype(work) * root) @ np.swapaxes(keys * root, -1, -2)
    raw = scores
    if softcap:
        scores = softcap * np.tanh(scores / softcap)
    capped = scores

    bias = np.zeros((1, 1, q_seq, total), work)
    if attn_mask is not None:
        mask = attn_mask
        mask = np.where(mask, 0, -np.inf) if mask.dtype == bool else mask.astype(work)
        if mask.shape[-1] < total:  # a short mask is padded with -inf (keys not attended)
            pad = [(0, 0)] * (mask.ndim - 1) + [(0, total - mask.shape[-1])]
            mask = np.pad(mask, pad, constant_values=-np.inf)
        bias = bias + mask
    past = 0 if past_key is None else past_key.shape[2]
    offset = past
    if nonpad_kv_seqlen is not None and past_key is None:
        offset = np.asarray(nonpad_kv_seqlen, np.int64) - q_seq
    allowed = _allowed_keys(
        q_seq, total, offset, is_causal, left_window_size, right_window_size, nonpad_kv_seqlen
    )
    bias = np.where(allowed, bias, -np.inf)
    scores = scores + bias
    biased = scores

    if softmax_precision is not None:
        # the weights are rounded to the softmax precision before and after the softmax
        precision = _SOFTMAX_DTYPES[softmax_precision]
        probs = _softmax_rows(scores.astype(precision).astype(work)).astype(precision)
        probs = probs.astype(work)
    else:
        probs = _softmax_rows(scores)
    y = probs @ values
    if q.ndim == 3:
        y = y.transpose(0, 2, 1, 3).reshape(batch, q_seq, -1)
    qk_out = (raw, capped, biased, probs)[qk_matmul_output_mode]
    return (
        y.astype(q.dtype),
        present_k.astype(k.dtype),
        present_v.astype(v.dtype),
        qk_out.astype(q.dtype),
    )


def RotaryEmbedding(
    x,
    cos_cache,
    sin_cache,
    position_ids=None,
    *,
    interleaved=0,
    num_heads=None,
    rotary_embedding_dim=0,
):
    work = _work_dtype(x.dtype)
    # bring the input to [batch, seq, heads, head_size]
    if x.ndim == 4:
        seq_first = np.transpose(x, (0, 2, 1, 3))
    else:
        batch, seq, hidden = x.shape
        seq_first = x.reshape(batch, seq, num_heads, hidden // num_heads)
    seq_first = seq_first.astype(work)
    dim = rotary_embedding_dim or seq_first.shape[-1]
    cos, sin = cos_cache.astype(work), sin_cache.astype(work)
    if position_ids is not None:
        cos, sin = cos[position_ids], sin[position_ids]
    cos, sin = cos[:, :, None, : dim // 2], sin[:, :, None, : dim // 2]
    rotated = seq_first[..., :dim]
    if interleaved:
        first, second = rotated[..., 0::2], rotated[..., 1::2]
    else:
        first, second = rotated[..., : dim // 2], rotated[..., dim // 2 :]
    new_first = first * cos - second * sin
    new_second = first * sin + second * cos
    out = seq_first.copy()
    if interleaved:
        out[..., 0:dim:2], out[..., 1:dim:2] = new_first, new_second
    else:
        out[..., : dim // 2], out[..., dim // 2 : dim] = new_first, new_second
    out = np.transpose(out, (0, 2, 1, 3)) if x.ndim == 4 else out.reshape(x.shape)
    return out.astype(x.dtype)


def SwiGLU(a, b, *, alpha=1.0):
    work = _work_dtype(a.dtype)
    gate = a.astype(work)
    return (gate / (1 + np.exp(-alpha * gate)) * b.astype(work)).astype(a.dtype)


def LinearAttention(
    query,
    key,
    value,
    past_state=None,
    decay=None,
    beta=None,
    *,
    chunk_size=64,
    kv_num_heads,
    q_num_heads,
    scale=0.0,
    update_rule="gated_delta",
):
    work = _work_dtype(query.dtype)
    q = _heads(query.astype(work), q_num_heads)  # [B, Hq, T, dk]
    k = _heads(key.astype(work), kv_num_heads)
    v = _heads(value.astype(work), kv_num_heads)  # [B, Hkv, T, dv]
    batch, _, steps, dk = q.shape
    dv = v.shape[-1]
    state = (
        np.zeros((batch, kv_num_heads, dk, dv), work)
        if past_state is None
        else past_state.astype(work)
    )
    if not scale:
        scale = 1.0 / np.sqrt(dk)
    gated, delta = update_rule in ("gated", "gated_delta"), update_rule in ("delta", "gated_delta")
    if update_rule not in ("linear", "gated", "delta", "gated_delta"):
        raise ValueError(f"LinearAttention: unknown update_rule {update_rule!r}")
    if gated:
        # per-key-dimension decay [B, Hkv, T, dk, 1] or per-head scalar [B, Hkv, T, 1, 1]
        per_dim = decay.shape[-1] == kv_num_heads * dk
        g = (
            _heads(decay.astype(work), kv_num_heads)
            if per_dim
            else np.transpose(decay.astype(work), (0, 2, 1))[..., None]
        )
        g = np.exp(g)[..., None]
    if delta:
        b = np.transpose(beta.astype(work), (0, 2, 1))  # [B, Hkv or 1, T]
    group = q_num_heads // kv_num_heads
    out = np.zeros((batch, q_num_heads, steps, dv), work)
    for t in range(steps):
        k_t, v_t = k[:, :, t], v[:, :, t]
        if gated:
            state = g[:, :, t] * state
        if delta:
            recalled = np.einsum("bhkv,bhk->bhv", state, k_t)
            v_t = b[:, :, t, None] * (v_t - recalled)
        state = state + k_t[..., :, None] * v_t[..., None, :]
        shared = np.repeat(state, group, axis=1)
        out[:, :, t] = scale * np.einsum("bhk,bhkv->bhv", q[:, :, t], shared)
    out = out.transpose(0, 2, 1, 3).reshape(batch, steps, q_num_heads * dv)
    state_dtype = query.dtype if past_state is None else past_state.dtype
    return out.astype(query.dtype), state.astype(state_dtype)


KERNELS = {
    "Attention": Attention,
    "RotaryEmbedding": RotaryEmbedding,
    "LinearAttention": LinearAttention,
    "SwiGLU": SwiGLU,
}
