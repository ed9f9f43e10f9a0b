# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu Attention kernel's two paths for its products, each against ref: the AVX-512
register tiles (src/cpu/attention_avx512.cpp: up to 6 query rows by 4 vectors of 16, K packed
by 16 x 16 transposes) and oneDNN's sgemm (GRAPHKILN_CPU_ATTENTION_TILES=0, and every CPU
without AVX-512). Sizes cross every edge of the tiles: query rows not a multiple of 6, keys
and head sizes not a multiple of 16 (and under 16), value heads wider than one tile of 64,
strided [B, S, H*D] operands, masks, causal frontiers, a sliding window."""

import numpy as np
import pytest

from cpu_testing import check_cpu, node, onnx_model, rand

RTOL, ATOL = 1e-4, 1e-5


def _check(q, k, v, mask=None, y_shape=None, **attrs):
    names = ["q", "k", "v"] + ([] if mask is None else ["mask"])
    feeds = {"q": q, "k": k, "v": v}
    if mask is not None:
        feeds["mask"] = mask
    if y_shape is None:
        y_shape = q.shape[:-1] + (v.shape[-1],)
    model = onnx_model(
        [node("Attention", names, ["y"], **attrs)],
        {n: feeds[n].shape for n in names},
        {"y": y_shape},
        opset=23,
        dtypes={"mask": mask.dtype} if mask is not None else None,
    )
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)


@pytest.fixture(params=["tiles", "sgemm"])
def path(request, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_CPU_ATTENTION_TILES", "1" if request.param == "tiles" else "0")
    return request.param


# (query rows, keys, head size, value head size)
SIZES = [
    (1, 1, 1, 1),
    (5, 7, 3, 2),
    (6, 16, 16, 16),
    (13, 33, 17, 40),
    (64, 64, 64, 64),
    (70, 100, 100, 130),
    (7, 200, 64, 80),
]


@pytest.mark.parametrize("sq,skv,d,dv", SIZES)
def test_sizes(path, sq, skv, d, dv):
    q = rand((2, 3, sq, d), 1, low=-2, high=2)
    k = rand((2, 3, skv, d), 2, low=-2, high=2)
    v = rand((2, 3, skv, dv), 3)
    _check(q, k, v, mask=rand((2, 1, 1, skv), 4, low=-3, high=0))


def test_strided_heads_with_causal_mask(path):
    b, sq, skv, hq, hkv, d, dv = 2, 19, 37, 4, 2, 24, 20
    q = rand((b, sq, hq * d), 5, low=-2, high=2)
    k = rand((b, skv, hkv * d), 6, low=-2, high=2)
    v = rand((b, skv, hkv * dv), 7)
    mask = rand((b, 1, sq, skv), 8, dtype=np.bool_)
    mask[..., 0] = True
    _check(
        q,
        k,
        v,
        mask=mask,
        y_shape=(b, sq, hq * dv),
        q_num_heads=hq,
        kv_num_heads=hkv,
        is_causal=1,
    )


def test_window_and_fully_masked_rows(path):
    q, k, v = (rand((1, 2, 21, 18), s, low=-2, high=2) for s in (9, 10, 11))
    mask = rand((21, 21), 12, low=-1, high=1)
    mask[4] = -np.inf  # a row with no key left: zeros
    _check(q, k, v, mask=mask, left_window_size=5, right_window_size=2)
