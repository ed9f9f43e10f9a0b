# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""passes/attention_heads.py on the cpu target, with a symbolic batch and sequence (every
exported transformer has them) where the head shapes are constants with 0 (copy the dim),
and with static dims where they are computed from Shape as torch exports them: Attention on
heads split by Reshape + Transpose(0, 2, 1, 3) reads the [B, S, H*D] projections in place
and the merging Transpose disappears. Results against ref running the graph as imported."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk
from cpu_testing import node, onnx_model, rand

H, KV, D, DV = 4, 2, 8, 6


def _split(x: str, heads: int, size: int, computed: bool, nodes: list, inits: dict) -> str:
    """x [B, L, heads*size] -> [B, heads, L, size]."""
    if computed:  # Shape(x)[:2] ++ [heads, size], as torch's view(*x.size()[:-1], H, D)
        nodes += [
            node("Shape", [x], [x + "_shape"]),
            node("Slice", [x + "_shape", "zero1", "two1"], [x + "_lead"]),
            node("Concat", [x + "_lead", x + "_tail"], [x + "_split"], axis=0),
        ]
        inits[x + "_tail"] = np.array([heads, size], np.int64)
    else:
        inits[x + "_split"] = np.array([0, 0, heads, size], np.int64)
    nodes += [
        node("Reshape", [x, x + "_split"], [x + "4"]),
        node("Transpose", [x + "4"], [x + "h"], perm=[0, 2, 1, 3]),
    ]
    return x + "h"


def _model(computed: bool, mask: bool, b="B", s="S", t="T") -> bytes:
    inits = {
        "zero1": np.array([0], np.int64),
        "two1": np.array([2], np.int64),
        "merge": np.array([0, 0, H * DV], np.int64),
    }
    nodes: list = []
    heads = [
        _split("q", H, D, computed, nodes, inits),
        _split("k", KV, D, computed, nodes, inits),
        _split("v", KV, DV, computed, nodes, inits),
    ]
    nodes += [
        node("Attention", heads + (["m"] if mask else []), ["a"], scale=0.3),
        node("Transpose", ["a"], ["t"], perm=[0, 2, 1, 3]),
        node("Reshape", ["t", "merge"], ["y"]),
    ]
    inputs = {"q": [b, s, H * D], "k": [b, t, KV * D], "v": [b, t, KV * DV]}
    if mask:
        inputs["m"] = [b, 1, 1, t]
    return onnx_model(nodes, inputs, {"y": [b, s, H * DV]}, inits, opset=23)


def _feeds(b: int, s: int, t: int, seed: int) -> dict:
    feeds = {
        "q": rand((b, s, H * D), seed, low=-2, high=2),
        "k": rand((b, t, KV * D), seed + 1, low=-2, high=2),
        "v": rand((b, t, KV * DV), seed + 2),
        "m": rand((b, 1, 1, t), seed + 3, low=-3, high=0),
    }
    return feeds


SIZES = ((2, 9, 11, 0), (3, 5, 17, 10))  # batch, query and key length, seed


@pytest.mark.parametrize(
    "computed,sizes",
    [(False, SIZES), (True, SIZES[:1]), (True, SIZES[1:])],
    ids=["zeros_symbolic", "from_shape_static", "from_shape_static_other"],
)
@pytest.mark.parametrize("mask", [False, True], ids=["no_mask", "mask"])
def test_heads_read_in_place(computed, sizes, mask):
    # symbolic dims where the head shapes are constants; a computed head shape needs static
    # dims (shape inference does not carry symbols through Shape -> Slice -> Concat)
    model = _model(computed, mask, *(sizes[0][:3] if computed else ("B", "S", "T")))
    program = gk.parse_onnx_buffer(model).compile("cpu")
    attention = [n for n in program.compiled_graph.nodes if n.op == "Attention"]
    assert len(attention) == 1
    assert (attention[0].attrs["q_num_heads"], attention[0].attrs["kv_num_heads"]) == (H, KV)
    assert not [n for n in program.compiled_graph.nodes if n.op == "Transpose"]
    oracle = gk.parse_onnx_buffer(model).compile("ref")
    for b, s, t, seed in sizes:
        feeds = _feeds(b, s, t, seed)
        if not mask:
            del feeds["m"]
        got = program.run(feeds)[0]
        want = oracle.run(feeds)[0]
        assert got.shape == (b, s, H * DV)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_heads_of_different_symbolic_batches_are_left_alone():
    """K's batch is another symbol than Q's: the rewrite does not assume they agree."""
    model = helper.make_model(
        helper.make_graph(
            [
                node("Transpose", ["q"], ["qh"], perm=[0, 2, 1, 3]),
                node("Transpose", ["k"], ["kh"], perm=[0, 2, 1, 3]),
                node("Transpose", ["v"], ["vh"], perm=[0, 2, 1, 3]),
                node("Attention", ["qh", "kh", "vh"], ["y"]),
            ],
            "test",
            [
                helper.make_tensor_value_info("q", TensorProto.FLOAT, ["B", "S", H, D]),
                helper.make_tensor_value_info("k", TensorProto.FLOAT, ["C", "T", H, D]),
                helper.make_tensor_value_info("v", TensorProto.FLOAT, ["C", "T", H, DV]),
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        ),
        opset_imports=[helper.make_opsetid("", 23)],
    ).SerializeToString()
    program = gk.parse_onnx_buffer(model).compile("cpu")
    attention = [n for n in program.compiled_graph.nodes if n.op == "Attention"]
    assert attention[0].attrs.get("q_num_heads") is None
    feeds = {
        "q": rand((2, 5, H, D), 1),
        "k": rand((2, 7, H, D), 2),
        "v": rand((2, 7, H, DV), 3),
    }
    want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)[0]
    np.testing.assert_allclose(program.run(feeds)[0], want, rtol=1e-4, atol=1e-5)
