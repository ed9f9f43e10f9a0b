# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""One-node com.microsoft GroupQueryAttention models for test_microsoft_ops.py (recorded on
onnxruntime by tools/record_microsoft_ops.py; numpy version in microsoft_gqa_numpy.py): a
batch of prompts, decoding with a cache (batches of 1 and 2), a prompt chunk after a cache,
packed QKV, a sliding window, softcap, interleaved and no rotary, no cache at all. Head
size 16 (onnxruntime's cpu kernel needs a multiple of 16)."""

from __future__ import annotations

import numpy as np

from microsoft_models import one_node_model

HEAD = 16
MAX_POSITIONS = 32


def rotary_caches() -> dict:
    positions = np.arange(MAX_POSITIONS)[:, None]
    inverse = 1.0 / (10000 ** (np.arange(0, HEAD, 2) / HEAD))
    return {
        "cos": np.cos(positions * inverse).astype(np.float32),
        "sin": np.sin(positions * inverse).astype(np.float32),
    }


def gqa_case(rng, batch, seq, past, q_heads, kv_heads, *, packed=False, cache=True, **attrs):
    """(model, feeds) of one GroupQueryAttention; `attrs` beyond the heads: do_rotary
    (default 1), local_window_size, softcap, rotary_interleaved; seqlens_k: each row's
    total - 1 (all rows full)."""
    feeds: dict = {}
    if packed:
        width = (q_heads + 2 * kv_heads) * HEAD
        feeds["query"] = rng.standard_normal((batch, seq, width)).astype(np.float32)
        names = ["query", "", ""]
    else:
        feeds["query"] = rng.standard_normal((batch, seq, q_heads * HEAD)).astype(np.float32)
        feeds["key"] = rng.standard_normal((batch, seq, kv_heads * HEAD)).astype(np.float32)
        feeds["value"] = rng.standard_normal((batch, seq, kv_heads * HEAD)).astype(np.float32)
        names = ["query", "key", "value"]
    if cache:
        for name in ("past_key", "past_value"):
            feeds[name] = rng.standard_normal((batch, kv_heads, past, HEAD)).astype(np.float32)
        names += ["past_key", "past_value"]
    else:
        names += ["", ""]
    total = past + seq
    feeds["seqlens_k"] = np.full((batch,), total - 1, np.int32)
    feeds["total_sequence_length"] = np.array(total, np.int32)
    names += ["seqlens_k", "total_sequence_length"]
    rotary = int(attrs.pop("do_rotary", 1))
    consts = rotary_caches() if rotary else {}
    names += ["cos", "sin"] if rotary else []
    attrs = {"num_heads": q_heads, "kv_num_heads": kv_heads, "do_rotary": rotary, **attrs}
    outputs = ["output", "present_key", "present_value"]
    return one_node_model("GroupQueryAttention", names, outputs, feeds, consts, attrs)


def gqa_cases() -> dict:
    rng = np.random.default_rng(20261206)
    return {
        "gqa_prompt_batch2": gqa_case(rng, 2, 6, 0, 4, 2),
        "gqa_decode": gqa_case(rng, 1, 1, 5, 4, 2),
        "gqa_decode_batch2": gqa_case(rng, 2, 1, 5, 4, 2),
        "gqa_chunk_after_cache": gqa_case(rng, 1, 3, 4, 4, 1),
        "gqa_packed_qkv": gqa_case(rng, 1, 4, 2, 4, 2, packed=True),
        "gqa_sliding_window": gqa_case(rng, 1, 7, 0, 2, 2, local_window_size=3),
        "gqa_softcap": gqa_case(rng, 1, 5, 2, 2, 1, softcap=2.0),
        "gqa_rotary_interleaved": gqa_case(rng, 1, 5, 2, 2, 1, rotary_interleaved=1),
        "gqa_no_rotary": gqa_case(rng, 1, 3, 2, 2, 2, do_rotary=0),
        "gqa_no_cache": gqa_case(rng, 1, 4, 0, 2, 1, cache=False),
    }
