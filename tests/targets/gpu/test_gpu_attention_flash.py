# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The fused (flash-style) attention kernel, src/gpu/attention_flash.hip, against ref, at
sizes that cross its tiles: query rows not a multiple of the 16-row block, keys not a
multiple of the 32-key chunk, head sizes of every register slice (<= 32, 64, 128), masks,
causal frontier, grouped-query heads, soft cap; and against the unfused kernel
(GRAPHKILN_GPU_FLASH=0). The small op cases in op_cases.py run through it too."""

import numpy as np
import pytest

import graphkiln as gk
from gpu_testing import requires_gpu
from op_cases import _attention

SHAPES = {
    # name: (q, k, v, y, mask shape, mask dtype, attrs)
    "bert_like_mask": (
        (3, 4, 77, 64),
        (3, 4, 77, 64),
        (3, 4, 77, 64),
        (3, 4, 77, 64),
        (3, 1, 1, 77),
        np.float32,
        {},
    ),
    "head_dim_128_causal": (
        (2, 2, 50, 128),
        (2, 2, 50, 128),
        (2, 2, 50, 96),
        (2, 2, 50, 96),
        None,
        np.float32,
        {"is_causal": 1},
    ),
    "head_dim_20_bool_mask": (
        (1, 3, 33, 20),
        (1, 3, 65, 20),
        (1, 3, 65, 20),
        (1, 3, 33, 20),
        (1, 3, 33, 65),
        np.bool_,
        {},
    ),
    "gqa_softcap_3d": (
        (2, 40, 8 * 48),
        (2, 70, 2 * 48),
        (2, 70, 2 * 48),
        (2, 40, 8 * 48),
        None,
        np.float32,
        {"q_num_heads": 8, "kv_num_heads": 2, "softcap": 5.0},
    ),
}


def _case(name):
    q, k, v, y, mask, mask_dtype, attrs = SHAPES[name]
    return _attention(q, k, v, y, mask, mask_dtype, **attrs)()


@requires_gpu
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_flash_attention_matches_ref(name):
    model, feeds = _case(name)
    want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)[0]
    got = gk.parse_onnx_buffer(model).compile("gpu").run(feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


@requires_gpu
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_flash_and_unfused_kernels_agree(name, monkeypatch):
    model, feeds = _case(name)
    fused = gk.parse_onnx_buffer(model).compile("gpu").run(feeds)[0]
    monkeypatch.setenv("GRAPHKILN_GPU_FLASH", "0")
    unfused = gk.parse_onnx_buffer(model).compile("gpu").run(feeds)[0]
    np.testing.assert_allclose(fused, unfused, rtol=1e-4, atol=1e-5 * np.abs(unfused).max())
