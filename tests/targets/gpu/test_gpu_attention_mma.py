# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The tensor-core attention kernel (src/gpu/attention_mma.hip), which float16 / bfloat16
Attention steps get on NVIDIA: on the device in fp16 / bf16 mode against ref in float32, at
sizes that cross its tiles (query rows not a multiple of the 64-row block or the 16-row warp
tile, keys not a multiple of the 64-key chunk, head sizes padded to 32 / 64 / 96 / 128,
different head and value sizes), with float and bool masks (rows with every key masked give
zeros), causal frontier with and without past keys, sliding window, soft cap, grouped-query
heads and [B, S, H*D] operands, masks of one row for every query row and of one a row
(staged in shared memory where their strides allow, read key by key where not), with 1-warp
blocks (small grids) and 4-warp ones; against
the scalar fused kernel (GRAPHKILN_GPU_MMA_ATTENTION=0); and every tuning variant on float16
and float32 steps."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import graphkiln as gk
from gpu_testing import compare, requires_gpu
from test_gpu_ops_more import model, rand

F32 = np.float32
TOL = {"fp16": 1e-2, "bf16": 5e-2, "fp32": 1e-4}  # as test_gpu_precision.py

CASES = {
    # name: (q, k, v shapes, attributes, mask (shape, kind) or None, past length)
    "decode_d32": (((2, 4, 1, 32), (2, 4, 37, 32), (2, 4, 37, 32)), {}, None, 0),
    "bert_d64_key_mask": (
        ((2, 12, 128, 64), (2, 12, 128, 64), (2, 12, 128, 64)),
        {},
        ((2, 1, 1, 128), "float"),
        0,
    ),
    "causal_d80": (((1, 4, 37, 80), (1, 4, 37, 80), (1, 4, 37, 80)), dict(is_causal=1), None, 0),
    "long_d128": (((1, 2, 200, 128), (1, 2, 200, 128), (1, 2, 200, 128)), {}, None, 0),
    "grouped_bool_d64": (
        ((2, 8, 37, 64), (2, 2, 128, 64), (2, 2, 128, 64)),
        {},
        ((2, 8, 37, 128), "bool"),
        0,
    ),
    "heads_3d_gqa_d48_v32_softcap": (
        ((2, 37, 8 * 48), (2, 70, 2 * 48), (2, 70, 2 * 32)),
        dict(q_num_heads=8, kv_num_heads=2, softcap=5.0),
        None,
        0,
    ),
    "d20_2d_float_mask": (
        ((1, 3, 33, 20), (1, 3, 65, 20), (1, 3, 65, 20)),
        dict(scale=0.3),
        ((33, 65), "float"),
        0,
    ),
    "past_causal_d64": (
        ((1, 4, 37, 64), (1, 4, 37, 64), (1, 4, 37, 64)),
        dict(is_causal=1),
        None,
        91,
    ),
    "window_causal_d64": (
        ((1, 2, 200, 64), (1, 2, 200, 64), (1, 2, 200, 64)),
        dict(is_causal=1, left_window_size=70),
        None,
        0,
    ),
    # enough (batch, head, 64-row) blocks for 4-warp blocks (the cases above get 1-warp ones)
    "many_blocks_causal_d64": (
        ((24, 12, 100, 64), (24, 12, 100, 64), (24, 12, 100, 64)),
        dict(is_causal=1),
        None,
        0,
    ),
    "many_blocks_gqa_bool_d96": (
        ((16, 16, 70, 96), (16, 4, 90, 96), (16, 4, 90, 96)),
        {},
        ((16, 16, 70, 90), "bool"),
        0,
    ),
    # masks whose strides allow 16-byte pieces have their 64-key chunks staged in shared
    # memory with K and V: one row for every query row (BERT's key padding as [B, 1, 1, S]),
    # or one a query row ([B, 1, S, S] as transformers exports it)
    "many_blocks_key_mask_d64": (
        ((40, 12, 128, 64), (40, 12, 128, 64), (40, 12, 128, 64)),
        {},
        ((40, 1, 1, 128), "float"),
        0,
    ),
    "per_head_key_mask_d64": (
        ((2, 4, 50, 64), (2, 4, 128, 64), (2, 4, 128, 64)),
        {},
        ((2, 4, 1, 128), "float"),
        0,
    ),
    # 112 keys: the first chunk staged, the second past the mask's end read key by key
    "key_bool_mask_tail_d64": (
        ((2, 4, 70, 64), (2, 4, 112, 64), (2, 4, 112, 64)),
        {},
        ((2, 1, 1, 112), "bool"),
        0,
    ),
    "many_blocks_row_mask_d64": (
        ((40, 4, 100, 64), (40, 4, 128, 64), (40, 4, 128, 64)),
        {},
        ((40, 1, 100, 128), "float"),
        0,
    ),
    # rows of 37 float32 keys are not whole 16-byte pieces: read from global memory
    "key_mask_unaligned_d32": (
        ((2, 2, 37, 32), (2, 2, 37, 32), (2, 2, 37, 32)),
        {},
        ((2, 1, 1, 37), "float"),
        0,
    ),
}


def attention_model(name: str):
    """(onnx model, feeds): one Attention node over float32 graph inputs (the precision pass
    runs it in half), random inputs with fixed seeds."""
    (qs, ks, vs), attrs, mask, past = CASES[name]
    return build_attention(qs, ks, vs, attrs, mask, past, seed=71)


def build_attention(qs, ks, vs, attrs, mask, past=0, seed=71):
    """(onnx model, feeds): Attention over float32 inputs q, k, v of these shapes, with a
    float or bool mask ((shape, kind) or None; bool masks allow key 0 and mask all of row 3
    where they have one,
    float ones push the last 5 keys to -10000 as BERT's padding) and `past` cached keys."""
    ins = {"q": (qs, F32), "k": (ks, F32), "v": (vs, F32)}
    feeds = {
        "q": rand(qs, seed, -2, 2),
        "k": rand(ks, seed + 1, -2, 2),
        "v": rand(vs, seed + 2, -1, 1),
    }
    names = ["q", "k", "v"]
    if mask is not None:
        shape, kind = mask
        if kind == "bool":
            m = rand(shape, seed + 3, 0, 2, np.int64).astype(bool)
            m[..., 0] = True
            if shape[-2] > 3:
                m[..., 3, :] = False  # a row with no allowed key: zeros
            feeds["m"] = m
        else:
            feeds["m"] = rand(shape, seed + 3, -4, 0)
            feeds["m"][..., -5:] = -10000.0  # padding keys, as BERT's mask has them
        ins["m"] = (shape, feeds["m"].dtype)
        names.append("m")
    outs = {"y": (None, F32)}
    if past:
        if mask is None:
            names.append("")  # no mask before the past inputs
        b, h, _, d = ks
        for p, dim in (("pk", d), ("pv", vs[-1])):
            ins[p] = ((b, h, past, dim), F32)
            feeds[p] = rand((b, h, past, dim), seed + 4 + len(p) + dim, -2, 2)
        names += ["pk", "pv"]
        outs.update({"present_k": (None, F32), "present_v": (None, F32)})
    node = helper.make_node("Attention", names, list(outs), **attrs)
    return model([node], ins, outs), feeds


def run(name: str, mode: str, **options):
    program, feeds = attention_model(name)
    if mode != "fp32":
        options[mode] = True
    return gk.parse_onnx_buffer(program).compile("gpu", tuning=False, **options).run(feeds)


def reference(name: str):
    program, feeds = attention_model(name)
    return gk.parse_onnx_buffer(program).compile("ref").run(feeds)


@requires_gpu
@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_mma_attention_matches_ref(name, mode):
    compare(run(name, mode), reference(name), TOL[mode], TOL[mode])


@requires_gpu
@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize("name", ["bert_d64_key_mask", "heads_3d_gqa_d48_v32_softcap"])
def test_scalar_kernel_when_mma_is_off(name, mode, monkeypatch):
    """GRAPHKILN_GPU_MMA_ATTENTION=0: the scalar fused kernel, with the same answers. The two
    kernels round differently (P is rounded to the half type for the tensor cores), so some
    element differs: proof that the default really took the tensor-core kernel."""
    on = run(name, mode)
    monkeypatch.setenv("GRAPHKILN_GPU_MMA_ATTENTION", "0")
    off = run(name, mode)
    compare(off, reference(name), TOL[mode], TOL[mode])
    compare(off, on, TOL[mode], TOL[mode])
    assert not np.array_equal(on[0], off[0])


def with_variant(variant, lower=None):
    """`lower` (default: gpu_target.lower_plan as it is now) with every Attention step's
    tuning variant set to `variant`."""
    from graphkiln.targets.gpu import target as gpu_target

    lower = lower or gpu_target.lower_plan

    def lower_with_variant(graph, fast_math=False, channels_last=False):
        plan = lower(graph, fast_math, channels_last)
        steps = [s for s in plan.steps if s.kernel == "Attention"]
        assert steps
        for step in steps:
            step.attrs["variant"] = variant
        return plan

    return lower_with_variant


@requires_gpu
@pytest.mark.parametrize("mode", ["fp16", "fp32"])
def test_every_tuning_variant_gives_the_same_answers(mode, monkeypatch):
    """Variants 1..4 (tuning/gpu.py) forced on the step: 4 is the tensor-core kernel on the
    float16 step and the heuristic kernel on the float32 one."""
    from graphkiln.targets.gpu import target as gpu_target
    from graphkiln.tuning.gpu import VARIANTS

    lower = gpu_target.lower_plan
    want = reference("grouped_bool_d64")
    results = {}
    for variant in range(1, VARIANTS["Attention"] + 1):
        monkeypatch.setattr(gpu_target, "lower_plan", with_variant(variant, lower))
        results[variant] = run("grouped_bool_d64", mode)
        compare(results[variant], want, TOL[mode], TOL[mode])
    monkeypatch.setattr(gpu_target, "lower_plan", lower)
    if mode == "fp16":  # 4 is the heuristic's choice there
        assert np.array_equal(results[4][0], run("grouped_bool_d64", mode)[0])
