# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Tiny one-node models of onnxruntime's com.microsoft ops, with seeded feeds: shared by
test_microsoft_ops.py and tools/record_microsoft_ops.py (which records onnxruntime's outputs
for them in data/microsoft_ops.npz). CASES: name -> (model, feeds); building is
deterministic, so the test rebuilds the models the recording was made from.

OPTIMIZED: the project's BERT / GPT-2 exports (tests/models/dynamic/) rewritten by
onnxruntime's transformer optimizer (data/<name>_ort_optimized.onnx, recorded by the same
tool at two input shapes each)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from microsoft_nbits_models import nbits_cases
from microsoft_quantized_models import quantized_cases

MS = "com.microsoft"
HIDDEN = 8
HEADS = 2

# optimized model -> (source in tests/models/dynamic, num_heads, hidden_size, model_type)
OPTIMIZED = {
    "bert_tiny": ("bert_tiny", 4, 32, "bert"),
    "gpt2_tiny": ("gpt2_tiny", 2, 32, "gpt2"),
}

_TYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.uint8): TensorProto.UINT8,
}


def _rand(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def one_node_model(
    op: str,
    inputs: list[str],
    outputs: list[str],
    feeds: dict,
    consts: dict,
    attrs: dict | None = None,
    domain: str = MS,
) -> tuple[onnx.ModelProto, dict]:
    """(a model of one node `op` of `domain`, `feeds`): `feeds` become graph inputs (their
    dtype and shape), `consts` initializers; outputs keep unknown shapes (float32 unless
    named mask_index: int32)."""

    def out_info(name):
        dtype = TensorProto.INT32 if name == "mask_index" else TensorProto.FLOAT
        return helper.make_tensor_value_info(name, dtype, None)

    node = helper.make_node(op, inputs, outputs, domain=domain, **(attrs or {}))
    graph = helper.make_graph(
        [node],
        op.lower(),
        [helper.make_tensor_value_info(k, _TYPES[v.dtype], v.shape) for k, v in feeds.items()],
        [out_info(o) for o in outputs if o],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8), feeds


def _activations(rng) -> dict:
    x = _rand(rng, 2, 3, HIDDEN)
    bias = _rand(rng, HIDDEN)
    skip = _rand(rng, 2, 3, HIDDEN)
    return {
        "gelu": one_node_model("Gelu", ["x"], ["y"], {"x": x * 3}, {}),
        "fast_gelu": one_node_model("FastGelu", ["x", "b"], ["y"], {"x": x * 3}, {"b": bias}),
        "fast_gelu_no_bias": one_node_model("FastGelu", ["x"], ["y"], {"x": x * 3}, {}),
        "bias_gelu": one_node_model("BiasGelu", ["x", "b"], ["y"], {"x": x * 3}, {"b": bias}),
        "quick_gelu": one_node_model("QuickGelu", ["x"], ["y"], {"x": x * 3}, {}, {"alpha": 1.5}),
        "bias_add": one_node_model(
            "BiasAdd", ["x", "b", "s"], ["y"], {"x": x, "s": skip}, {"b": bias}
        ),
    }


def _fused_matmul(rng) -> dict:
    cases = {}
    # (A shape, B shape, attributes): A and B as stored, before the transposes
    forms = {
        "fused_matmul_alpha": ((2, 3, 4), (2, 4, 5), {"alpha": 0.5}),
        "fused_matmul_trans": ((2, 4, 3), (2, 5, 4), {"transA": 1, "transB": 1, "alpha": 2.0}),
        "fused_matmul_trans_batch": ((3, 2, 4), (4, 2, 5), {"transBatchA": 1, "transBatchB": 1}),
        "fused_matmul_trans_batch_trans": (
            (4, 2, 3),
            (5, 2, 4),
            {"transBatchA": 1, "transA": 1, "transBatchB": 1, "transB": 1},
        ),
    }
    for name, (sa, sb, attrs) in forms.items():
        feeds = {"a": _rand(rng, *sa), "b": _rand(rng, *sb)}
        cases[name] = one_node_model("FusedMatMul", ["a", "b"], ["y"], feeds, {}, attrs)
    return cases


def _norms(rng) -> dict:
    x, skip = _rand(rng, 2, 3, HIDDEN) * 2, _rand(rng, 2, 3, HIDDEN)
    gamma, beta, bias = _rand(rng, HIDDEN) + 1.5, _rand(rng, HIDDEN), _rand(rng, HIDDEN)
    outs4 = ["out", "mean", "inv_std_var", "sum"]
    return {
        "skip_layer_norm": one_node_model(
            "SkipLayerNormalization",
            ["x", "skip", "gamma", "beta", "bias"],
            ["out", "", "", "sum"],
            {"x": x, "skip": skip},
            {"gamma": gamma, "beta": beta, "bias": bias},
            {"epsilon": 1e-5},
        ),
        "skip_layer_norm_stats": one_node_model(
            "SkipLayerNormalization",
            ["x", "skip", "gamma", "beta"],
            outs4,
            {"x": x, "skip": skip},
            {"gamma": gamma, "beta": beta},
        ),
        "skip_layer_norm_2d_skip": one_node_model(
            "SkipLayerNormalization",
            ["x", "skip", "gamma"],
            ["out"],
            {"x": x, "skip": skip[0]},
            {"gamma": gamma},
        ),
        "skip_simplified_layer_norm": one_node_model(
            "SkipSimplifiedLayerNormalization",
            ["x", "skip", "gamma", "bias"],
            ["out", "", "", "sum"],
            {"x": x, "skip": skip},
            {"gamma": gamma, "bias": bias},
            {"epsilon": 1e-6},
        ),
        "skip_simplified_layer_norm_inv_std": one_node_model(
            "SkipSimplifiedLayerNormalization",
            ["x", "skip", "gamma"],
            ["out", "", "inv_std_var"],
            {"x": x, "skip": skip},
            {"gamma": gamma},
        ),
        "simplified_layer_norm": one_node_model(
            "SimplifiedLayerNormalization",
            ["x", "gamma"],
            ["out"],
            {"x": x},
            {"gamma": gamma},
            {"epsilon": 1e-6, "axis": -1},
        ),
    }


def _embed(rng) -> dict:
    batch, seq, vocab = 2, 5, 20
    ids = rng.integers(0, vocab, size=(batch, seq)).astype(np.int32)
    segment_ids = (np.arange(seq)[None, :] >= np.array([[2], [3]])).astype(np.int32)
    mask = (np.arange(seq)[None, :] < np.array([[5], [3]])).astype(np.int32)
    position_ids = np.array([[2, 3, 4, 5, 6], [0, 1, 2, 3, 4]], dtype=np.int32)
    tables = {
        "words": _rand(rng, vocab, HIDDEN),
        "positions": _rand(rng, 16, HIDDEN),
        "segments": _rand(rng, 2, HIDDEN),
        "gamma": _rand(rng, HIDDEN) + 1.5,
        "beta": _rand(rng, HIDDEN),
    }
    return {
        "embed_layer_norm": one_node_model(
            "EmbedLayerNormalization",
            ["ids", "segment_ids", "words", "positions", "segments", "gamma", "beta", "mask"],
            ["out", "mask_index", "embedding_sum"],
            {"ids": ids, "segment_ids": segment_ids, "mask": mask},
            tables,
        ),
        "embed_layer_norm_position_ids": one_node_model(
            "EmbedLayerNormalization",
            ["ids", "", "words", "positions", "", "gamma", "beta", "mask", "position_ids"],
            ["out", "mask_index"],
            {"ids": ids, "mask": mask, "position_ids": position_ids},
            {k: v for k, v in tables.items() if k != "segments"},
            {"epsilon": 1e-5},
        ),
    }


def _attention(rng) -> dict:
    batch, seq = 2, 5
    x = _rand(rng, batch, seq, HIDDEN)
    weights, bias = _rand(rng, HIDDEN, 3 * HIDDEN), _rand(rng, 3 * HIDDEN)
    mask = (np.arange(seq)[None, :] < np.array([[5], [3]])).astype(np.int32)
    lengths = np.array([4, 2], dtype=np.int32)
    inputs = ["x", "w", "bias", "mask"]
    heads = {"num_heads": HEADS}
    wide = _rand(rng, HIDDEN, 2 * HIDDEN + 2 * HIDDEN)  # V twice as wide as Q / K
    cases = {
        "attention_mask_2d": one_node_model(
            "Attention", inputs, ["y"], {"x": x, "mask": mask}, {"w": weights, "bias": bias}, heads
        ),
        "attention_lengths": one_node_model(
            "Attention",
            inputs,
            ["y"],
            {"x": x, "mask": lengths},
            {"w": weights, "bias": bias},
            heads,
        ),
        "attention_causal_qkv_sizes": one_node_model(
            "Attention",
            ["x", "w"],
            ["y"],
            {"x": x},
            {"w": wide},
            {**heads, "unidirectional": 1, "qkv_hidden_sizes": [HIDDEN, HIDDEN, 2 * HIDDEN]},
        ),
        "attention_scale_bias_input": one_node_model(
            "Attention",
            ["x", "w", "bias", "", "", "attention_bias"],
            ["y"],
            {"x": x, "attention_bias": _rand(rng, 1, HEADS, seq, seq)},
            {"w": weights, "bias": bias},
            {**heads, "scale": 0.3},
        ),
    }
    kv_seq = 6
    q, k = _rand(rng, batch, seq, HIDDEN), _rand(rng, batch, kv_seq, HIDDEN)
    v = _rand(rng, batch, kv_seq, HIDDEN)
    kv_mask = (np.arange(kv_seq)[None, :] < np.array([[6], [4]])).astype(np.int32)
    cases["mha_bias_key_padding_mask"] = one_node_model(
        "MultiHeadAttention",
        ["q", "k", "v", "bias", "mask"],
        ["y"],
        {"q": q, "k": k, "v": v, "mask": kv_mask},
        {"bias": bias},
        heads,
    )
    cases["mha_attention_bias_scale"] = one_node_model(
        "MultiHeadAttention",
        ["q", "k", "v", "", "", "attention_bias"],
        ["y"],
        {"q": q, "k": k, "v": v, "attention_bias": _rand(rng, batch, 1, seq, kv_seq)},
        {},
        {**heads, "scale": 0.5},
    )
    cases["mha_causal_self"] = one_node_model(
        "MultiHeadAttention",
        ["q", "k", "v"],
        ["y"],
        {"q": q, "k": q * 0.5 + 0.1, "v": _rand(rng, batch, seq, HIDDEN)},
        {},
        {**heads, "unidirectional": 1},
    )
    return cases


def _rotary(rng) -> dict:
    batch, seq, head = 2, 5, 4
    cos = np.cos(np.arange(16)[:, None] * np.array([1.0, 0.3])).astype(np.float32)
    sin = np.sin(np.arange(16)[:, None] * np.array([1.0, 0.3])).astype(np.float32)
    caches = {"cos": cos, "sin": sin}
    names = ["x", "position_ids", "cos", "sin"]
    position_ids = rng.integers(0, 16, size=(batch, seq)).astype(np.int64)
    x3, x4 = _rand(rng, batch, seq, HEADS * head), _rand(rng, batch, HEADS, seq, head)
    wide = _rand(rng, batch, seq, HEADS * 2 * head)  # heads of 8, the first 4 features rotated
    return {
        "rotary_3d_position_ids": one_node_model(
            "RotaryEmbedding",
            names,
            ["y"],
            {"x": x3, "position_ids": position_ids},
            caches,
            {"num_heads": HEADS},
        ),
        "rotary_4d_offset_interleaved": one_node_model(
            "RotaryEmbedding",
            names,
            ["y"],
            {"x": x4, "position_ids": np.array([3], dtype=np.int64)},
            caches,
            {"interleaved": 1},
        ),
        "rotary_partial": one_node_model(
            "RotaryEmbedding",
            names,
            ["y"],
            {"x": wide, "position_ids": position_ids},
            caches,
            {"num_heads": HEADS, "rotary_embedding_dim": head},
        ),
    }


def build_cases() -> dict[str, tuple[onnx.ModelProto, dict]]:
    """name -> (model, feeds)."""
    rng = np.random.default_rng(20240522)
    cases: dict = {}
    for family in (_activations, _fused_matmul, _norms, _embed, _attention, _rotary):
        cases.update(family(rng))
    cases.update(quantized_cases())  # seeded on their own
    cases.update(nbits_cases())  # seeded on their own
    from microsoft_gqa_models import gqa_cases  # it builds on one_node_model above

    cases.update(gqa_cases())  # seeded on their own
    return cases
