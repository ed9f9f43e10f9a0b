# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""cpu Attention with past_key / past_value and present_key / present_value outputs (the
present tensors are built by CopyRegions, the kernel's causal frontier and windows are
offset by the past length), compared with ref."""

import pytest

from cpu_testing import check_cpu, node, onnx_model, rand

RTOL, ATOL = 1e-4, 1e-5


def _run(
    b=2,
    hq=4,
    hkv=2,
    sq=3,
    past=5,
    d=8,
    dv=6,
    three_d=False,
    mask_shape=None,
    outputs=("y", "pk", "pv"),
    **attrs,
):
    rng_seed = 1
    if three_d:
        q = rand((b, sq, hq * d), rng_seed, low=-2, high=2)
        k = rand((b, sq, hkv * d), rng_seed + 1, low=-2, high=2)
        v = rand((b, sq, hkv * dv), rng_seed + 2)
        attrs.update(q_num_heads=hq, kv_num_heads=hkv)
        y_shape = (b, sq, hq * dv)
    else:
        q = rand((b, hq, sq, d), rng_seed, low=-2, high=2)
        k = rand((b, hkv, sq, d), rng_seed + 1, low=-2, high=2)
        v = rand((b, hkv, sq, dv), rng_seed + 2)
        y_shape = (b, hq, sq, dv)
    feeds = {"q": q, "k": k, "v": v}
    names = ["q", "k", "v"]
    if mask_shape is not None:
        feeds["mask"] = rand(mask_shape, 4, low=-2, high=1)
        names.append("mask")
    else:
        names.append("")
    feeds["past_k"] = rand((b, hkv, past, d), 5, low=-2, high=2)
    feeds["past_v"] = rand((b, hkv, past, dv), 6)
    names += ["past_k", "past_v"]
    shapes = {"y": y_shape, "pk": (b, hkv, past + sq, d), "pv": (b, hkv, past + sq, dv)}
    outs = [o if o in outputs else "" for o in ("y", "pk", "pv")]
    while outs[-1] == "":
        outs.pop()
    model = onnx_model(
        [node("Attention", names, outs, **attrs)],
        {n: feeds[n].shape for n in names if n},
        {o: shapes[o] for o in outs if o},
        opset=23,
    )
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("three_d", [False, True])
@pytest.mark.parametrize("causal", [0, 1])
def test_past_and_present(three_d, causal):
    _run(three_d=three_d, is_causal=causal)


@pytest.mark.parametrize("outputs", [("y",), ("y", "pk"), ("y", "pk", "pv")])
def test_present_outputs_optional(outputs):
    _run(outputs=outputs, is_causal=1)


@pytest.mark.parametrize("mask_shape", [(3, 8), (2, 4, 3, 8), (2, 1, 3, 8)])
def test_past_with_mask(mask_shape):
    _run(mask_shape=mask_shape)


@pytest.mark.parametrize("window", [(2, -1), (1, 0), (-1, 1)])
def test_past_with_window(window):
    left, right = window
    _run(is_causal=int(right == -1), left_window_size=left, right_window_size=right)


def test_decode_one_token_gqa():
    _run(hq=8, hkv=2, sq=1, past=17, is_causal=1)


def test_empty_past():
    _run(past=0, is_causal=1)
