# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The float32 tensor-core attention kernel (src/gpu/attention_mma_f32.hip: products split
three ways into TF32 parts, float32 accuracy), on the device against ref at float32
tolerances: steps large enough for the heuristic to pick it (BERT-base shaped at batch 32,
causal, grouped heads with a bool mask, [B, S, H*D] operands), the tuning variant 5 forcing it
on small steps (tile edges, head sizes 20 to 64, windows, soft cap), and
GRAPHKILN_GPU_MMA_ATTENTION=0 (the scalar kernel) giving the same answers."""

from __future__ import annotations

import numpy as np
import pytest

import graphkiln as gk
from gpu_testing import compare, requires_gpu
from test_gpu_attention_mma import build_attention

F32 = np.float32
# float32 accuracy: far inside what TF32 rounding alone (10 mantissa bits, ~1e-3) would give
RTOL, ATOL = 2e-5, 2e-5

LARGE = {
    # name: (q, k, v shapes, attributes, mask (shape, kind) or None)
    "bert_b32_key_mask": (((32, 12, 128, 64),) * 3, {}, ((32, 1, 1, 128), "float")),
    "causal_d64": (((24, 12, 100, 64),) * 3, dict(is_causal=1), None),
    "gqa_bool_d48_v32": (((16, 16, 70, 48), (16, 4, 90, 48), (16, 4, 90, 32)), {},
                         ((16, 16, 70, 90), "bool")),
    "heads_3d": (((20, 128, 12 * 64),) * 3, dict(q_num_heads=12, kv_num_heads=12), None),
}
SMALL = {
    "decode_d32": (((2, 4, 1, 32), (2, 4, 37, 32), (2, 4, 37, 32)), {}, None),
    "edges_d20_scale": (((1, 3, 33, 20), (1, 3, 65, 20), (1, 3, 65, 20)), dict(scale=0.3),
                        ((33, 65), "float")),
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
def test_variant_5_forces_it_on_small_steps(name, monkeypatch):
    from graphkiln.targets.gpu import target as gpu_target

    lower = gpu_target.lower_plan

    def with_variant_5(graph, fast_math=False, channels_last=False):
        plan = lower(graph, fast_math, channels_last)
        steps = [s for s in plan.steps if s.kernel == "Attention"]
        assert steps
        for step in steps:
            step.attrs["variant"] = 5
        return plan

    default = run(SMALL[name])  # small: the scalar kernel
    monkeypatch.setattr(gpu_target, "lower_plan", with_variant_5)
    forced = run(SMALL[name])
    compare(forced, reference(SMALL[name]), RTOL, ATOL)
    compare(forced, default, RTOL, ATOL)
    assert not np.array_equal(forced[0], default[0])
