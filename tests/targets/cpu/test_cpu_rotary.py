# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""RotaryEmbedding on cpu (src/cpu/rotary.cpp) against ref."""

import numpy as np
import pytest
from onnx import helper

from cpu_testing import check_cpu, node, rand


def _model(x_shape, cache_shape, pos_shape, attrs):
    names = ["x", "cos", "sin"] + (["pos"] if pos_shape else [])
    ins = [
        helper.make_tensor_value_info("x", 1, x_shape),
        helper.make_tensor_value_info("cos", 1, cache_shape),
        helper.make_tensor_value_info("sin", 1, cache_shape),
    ]
    if pos_shape:
        ins.append(helper.make_tensor_value_info("pos", 7, pos_shape))
    graph = helper.make_graph(
        [node("RotaryEmbedding", names, ["y"], **attrs)],
        "t",
        ins,
        [helper.make_tensor_value_info("y", 1, x_shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)]).SerializeToString()


@pytest.mark.parametrize("three_d", [False, True])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
@pytest.mark.parametrize("with_pos", [True, False])
def test_rotary(three_d, interleaved, rotary_dim, with_pos):
    b, h, s, d = 2, 3, 5, 8
    x_shape = (b, s, h * d) if three_d else (b, h, s, d)
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim}
    if three_d:
        attrs["num_heads"] = h
    half = (rotary_dim or d) // 2
    cache_shape = (11, half) if with_pos else (b, s, half)
    feeds = {
        "x": rand(x_shape, seed=1),
        "cos": rand(cache_shape, seed=2),
        "sin": rand(cache_shape, seed=3),
    }
    if with_pos:
        feeds["pos"] = np.random.default_rng(4).integers(0, 11, size=(b, s)).astype(np.int64)
    check_cpu(_model(x_shape, cache_shape, (b, s) if with_pos else None, attrs), feeds)


def test_rotary_large_parallel():
    b, h, s, d = 2, 8, 64, 64
    feeds = {
        "x": rand((b, h, s, d), seed=5),
        "cos": rand((128, 32), seed=6),
        "sin": rand((128, 32), seed=7),
        "pos": np.tile(np.arange(s, dtype=np.int64), (b, 1)),
    }
    check_cpu(_model((b, h, s, d), (128, 32), (b, s), {}), feeds)
