# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy versions of onnxruntime's com.microsoft ops, written from the ContribOperators
documentation, for test_microsoft_ops.py: EXPECTED maps a case of microsoft_models.py to a
function of (feeds, initializers, attributes) returning its outputs in order."""

from __future__ import annotations

import math

import numpy as np

from microsoft_gqa_numpy import EXPECTED_GQA
from microsoft_nbits_numpy import EXPECTED_NBITS
from microsoft_quantized_numpy import EXPECTED_QUANTIZED

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def fast_gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * x + 0.0356774081 * x**3))


def layer_norm(x, gamma, beta, eps):
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    inv = 1.0 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    y = (x - mean) * inv * gamma
    return (y if beta is None else y + beta), mean, inv


def rms_norm(x, gamma, eps):
    x = x.astype(np.float64)
    inv = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * inv * gamma, inv


def attention(q, k, v, heads, scale=None, add=None, causal=False):
    """Multi-head attention over [batch, seq, hidden] q / k / v; `add` broadcasts to the
    scores [batch, heads, seq, kv_seq]."""
    b, s, h = q.shape
    t = k.shape[1]
    dq, dv = h // heads, v.shape[2] // heads
    qh = q.reshape(b, s, heads, dq).transpose(0, 2, 1, 3).astype(np.float64)
    kh = k.reshape(b, t, heads, dq).transpose(0, 2, 1, 3).astype(np.float64)
    vh = v.reshape(b, t, heads, dv).transpose(0, 2, 1, 3).astype(np.float64)
    scores = qh @ kh.transpose(0, 1, 3, 2) * (scale or 1.0 / math.sqrt(dq))
    if add is not None:
        scores = scores + add
    if causal:
        scores = np.where(np.tril(np.ones((s, t), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ vh).transpose(0, 2, 1, 3).reshape(b, s, heads * dv)


def key_mask(keep):
    """[batch, kv_seq] 0/1 -> the additive [batch, 1, 1, kv_seq] mask (-10000 drops)."""
    return ((1.0 - keep) * -10000.0)[:, None, None, :]


def _trans(x, trans, trans_batch):
    r = x.ndim
    perm = list(range(r))
    if trans_batch:
        perm = list(range(1, r - 1)) + [0, r - 1]
    if trans:
        perm[-1], perm[-2] = perm[-2], perm[-1]
    return x.transpose(perm)


def fused_matmul(f, c, a):
    left = _trans(f["a"], a.get("transA", 0), a.get("transBatchA", 0)).astype(np.float64)
    right = _trans(f["b"], a.get("transB", 0), a.get("transBatchB", 0)).astype(np.float64)
    return [a.get("alpha", 1.0) * (left @ right)]


def skip_layer_norm(f, c, a):
    total = f["x"] + f["skip"] + (c["bias"] if "bias" in c else 0)
    y, mean, inv = layer_norm(total, c["gamma"], c.get("beta"), a.get("epsilon", 1e-12))
    return [y, mean, inv, total]


def skip_simplified(f, c, a):
    total = f["x"] + f["skip"] + (c["bias"] if "bias" in c else 0)
    y, inv = rms_norm(total, c["gamma"], a.get("epsilon", 1e-12))
    return [y, inv, total]


def embed(f, c, a):
    ids = f["ids"]
    positions = f.get("position_ids", np.arange(ids.shape[1])[None, :])
    total = c["words"][ids] + c["positions"][positions]
    if "segment_ids" in f:
        total = total + c["segments"][f["segment_ids"]]
    y, _, _ = layer_norm(total, c["gamma"], c["beta"], a.get("epsilon", 1e-12))
    return [y, f["mask"].sum(1).astype(np.int32), total]


def packed_attention(f, c, a):
    qkv = f["x"].astype(np.float64) @ c["w"] + c.get("bias", 0)
    sizes = a.get("qkv_hidden_sizes") or [qkv.shape[-1] // 3] * 3
    q, k, v = np.split(qkv, np.cumsum(sizes)[:2], axis=-1)
    add = None
    if "mask" in f:
        mask = f["mask"]
        if mask.ndim == 1:  # lengths
            mask = (np.arange(q.shape[1])[None, :] < mask[:, None]).astype(np.float64)
        add = key_mask(mask)
    if "attention_bias" in f:
        add = f["attention_bias"] if add is None else add + f["attention_bias"]
    return [attention(q, k, v, a["num_heads"], a.get("scale"), add, a.get("unidirectional", 0))]


def multi_head_attention(f, c, a):
    q, k, v = f["q"], f["k"], f["v"]
    if "bias" in c:
        bq, bk, bv = np.split(c["bias"], 3)
        q, k, v = q + bq, k + bk, v + bv
    add = key_mask(f["mask"]) if "mask" in f else None
    if "attention_bias" in f:
        add = f["attention_bias"] if add is None else add + f["attention_bias"]
    return [attention(q, k, v, a["num_heads"], a.get("scale"), add, a.get("unidirectional", 0))]


def rotary(f, c, a):
    x, ids = f["x"].astype(np.float64), f["position_ids"]
    if x.ndim == 3:  # [batch, seq, heads * head] -> [batch, heads, seq, head]
        b, s, hidden = x.shape
        x = x.reshape(b, s, a["num_heads"], -1).transpose(0, 2, 1, 3)
    seq = x.shape[2]
    if ids.ndim == 1:
        ids = np.broadcast_to(ids[0] + np.arange(seq)[None, :], (x.shape[0], seq))
    cos, sin = c["cos"][ids][:, None], c["sin"][ids][:, None]  # [batch, 1, seq, rdim / 2]
    rdim = a.get("rotary_embedding_dim") or x.shape[-1]
    y = x.copy()
    if a.get("interleaved"):
        x1, x2 = x[..., 0:rdim:2], x[..., 1:rdim:2]
        y[..., 0:rdim:2], y[..., 1:rdim:2] = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    else:
        x1, x2 = x[..., : rdim // 2], x[..., rdim // 2 : rdim]
        y[..., : rdim // 2], y[..., rdim // 2 : rdim] = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    if f["x"].ndim == 3:
        y = y.transpose(0, 2, 1, 3).reshape(f["x"].shape)
    return [y]


EXPECTED = {
    "gelu": lambda f, c, a: [gelu(f["x"])],
    "fast_gelu": lambda f, c, a: [fast_gelu(f["x"] + c["b"])],
    "fast_gelu_no_bias": lambda f, c, a: [fast_gelu(f["x"])],
    "bias_gelu": lambda f, c, a: [gelu(f["x"] + c["b"])],
    "quick_gelu": lambda f, c, a: [f["x"] / (1.0 + np.exp(-a["alpha"] * f["x"]))],
    "bias_add": lambda f, c, a: [f["x"] + c["b"] + f["s"]],
    "fused_matmul_alpha": fused_matmul,
    "fused_matmul_trans": fused_matmul,
    "fused_matmul_trans_batch": fused_matmul,
    "fused_matmul_trans_batch_trans": fused_matmul,
    "skip_layer_norm": lambda f, c, a: [skip_layer_norm(f, c, a)[i] for i in (0, 3)],
    "skip_layer_norm_stats": skip_layer_norm,
    "skip_layer_norm_2d_skip": lambda f, c, a: skip_layer_norm(f, c, a)[:1],
    "skip_simplified_layer_norm": lambda f, c, a: [skip_simplified(f, c, a)[i] for i in (0, 2)],
    "skip_simplified_layer_norm_inv_std": lambda f, c, a: skip_simplified(f, c, a)[:2],
    "simplified_layer_norm": lambda f, c, a: [rms_norm(f["x"], c["gamma"], a["epsilon"])[0]],
    "embed_layer_norm": embed,
    "embed_layer_norm_position_ids": lambda f, c, a: embed(f, c, a)[:2],
    "attention_mask_2d": packed_attention,
    "attention_lengths": packed_attention,
    "attention_causal_qkv_sizes": packed_attention,
    "attention_scale_bias_input": packed_attention,
    "mha_bias_key_padding_mask": multi_head_attention,
    "mha_attention_bias_scale": multi_head_attention,
    "mha_causal_self": multi_head_attention,
    "rotary_3d_position_ids": rotary,
    "rotary_4d_offset_interleaved": rotary,
    "rotary_partial": rotary,
}
EXPECTED.update(EXPECTED_QUANTIZED)
EXPECTED.update(EXPECTED_NBITS)
EXPECTED.update(EXPECTED_GQA)
