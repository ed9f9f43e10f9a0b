# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The float32 tensor-core attention kernel (src/gpu/attention_mma_f32.hip: products split
three ways into TF32 parts, float32 accuracy), on the device against ref at float32
tolerances: large steps (BERT-base shaped at batch 32, causal, grouped heads with a bool mask,
[B, S, H*D] operands, 4-warp blocks) and small ones (1-warp blocks, tile edges, head sizes 20
to 64, windows, soft cap), each against the scalar kernel (GRAPHKILN_GPU_MMA_ATTENTION=0 or
tuning variant 2) giving the same answers by another order of operations."""

from __future__ import annotations

import numpy as np
import pytest

import graphkiln as gk
from gpu_testing import compare, requires_gpu
from test_gpu_attention_mma import build_attention, with_variant

F32 = np.float32
# float32 accuracy: far inside what TF32 rounding alone (10 mantissa bits, ~1e-3) would give
RTOL, ATOL = 2e-5, 2e-5

LARGE = {
    # name: (q, k, v shapes, attributes, mask (shape, kind) or None)
    "bert_b32_key_mask": (((32, 12, 128, 64),) * 3, {}, ((32, 1, 1, 128), "float")),
    "causal_d64": (((24, 12, 100, 64),) * 3, dict(is_causal=1), None),
    "gqa_bool_d48_v32": (
        ((16, 16, 70, 48), (16, 4, 90, 48), (16, 4, 90, 32)),
        {},
        ((16, 16, 70, 90), "bool"),
    ),
    "heads_3d": (((20, 128, 12 * 64),) * 3, dict(q_num_heads=12, kv_num_heads=12), None),
}
SMALL = {
    "decode_d32": (((2, 4, 1, 32), (2, 4, 37, 32), (2, 4, 37, 32)), {}, None),
    "edges_d20_scale": (
        ((1, 3, 33, 20), (1, 3, 65, 20), (1, 3, 65, 20)),
        dict(scale=0.3),
        ((33, 65), "float"),
    ),
    "window_causal_d64": (((1, 2, 200, 64),) * 3, dict(is_causal=1, left_window_size=70), None),
    "softcap_d56": (((2, 4, 37, 56),) * 3, dict(softcap=5.0), None),
}


def attention_model(case):
    (qs, ks, vs), attrs, mask = case
    return build_attention(qs, ks, vs, attrs, mask, seed=81)


def run(case, **options):
    program, feeds = attention_model(case)
    return gk.parse_onnx_buffer(program).compile("gpu", tuning=False, **options).run(feeds)


def reference(case):
    program, feeds = attention_model(case)
    return gk.parse_onnx_buffer(program).compile("ref").run(feeds)


@requires_gpu
@pytest.mark.parametrize("name", sorted(LARGE))
def test_large_float32_attention_matches_ref(name, monkeypatch):
    got = run(LARGE[name])
    compare(got, reference(LARGE[name]), RTOL, ATOL)
    # the scalar kernel gives the same answers, by another order of operations: some element
    # differs, which shows the default took the tensor-core kernel
    monkeypatch.setenv("GRAPHKILN_GPU_MMA_ATTENTION", "0")
    scalar = run(LARGE[name])
    compare(scalar, got, RTOL, ATOL)
    assert not np.array_equal(scalar[0], got[0])


@requires_gpu
@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_steps_take_it_too(name, monkeypatch):
    """Small steps (1-warp blocks, tile edges, windows, soft cap) get the tensor-core kernel by
    default, as with variant 5; variant 2 (the scalar kernel) gives the same answers by
    another order of operations, so some element differs."""
    from graphkiln.targets.gpu import target as gpu_target

    lower = gpu_target.lower_plan
    default = run(SMALL[name])
    compare(default, reference(SMALL[name]), RTOL, ATOL)
    monkeypatch.setattr(gpu_target, "lower_plan", with_variant(5, lower))
    assert np.array_equal(run(SMALL[name])[0], default[0])
    monkeypatch.setattr(gpu_target, "lower_plan", with_variant(2, lower))
    scalar = run(SMALL[name])
    compare(scalar, default, RTOL, ATOL)
    assert not np.array_equal(scalar[0], default[0])
