# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""passes/attention_heads.py in the gpu pipeline: Attention on heads split by Reshape +
Transpose(0, 2, 1, 3) reads the [B, S, H*D] projections in place, and the merging Transpose
(also behind the NaN guard exporters add) disappears. Checked on the graph and, through the
numpy model of the gpu kernels, against ref on the original model."""

import numpy as np
import pytest

import graphkiln as gk
from cpu_testing import node, onnx_model, rand
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuTarget
from gpu_testing import run_emulated

B, S, T, H, KV, D, DV = 2, 9, 11, 4, 2, 8, 6


def _model(guard: bool, mask: bool, merge: bool = True):
    def shape(name, dims):
        return np.array(dims, np.int64)

    inits = {
        "sq": shape("sq", [B, S, H, D]),
        "sk": shape("sk", [B, T, KV, D]),
        "sv": shape("sv", [B, T, KV, DV]),
        "so": np.array([B, S, H * DV], np.int64),
        "zero": np.zeros((), np.float32),
    }
    nodes = []
    for x, s in (("q", "sq"), ("k", "sk"), ("v", "sv")):
        nodes.append(node("Reshape", [x, s], [x + "4"]))
        nodes.append(node("Transpose", [x + "4"], [x + "h"], perm=[0, 2, 1, 3]))
    att_inputs = ["qh", "kh", "vh"] + (["m"] if mask else [])
    nodes.append(node("Attention", att_inputs, ["a"], scale=0.3))
    merged = "a"
    if guard:
        nodes += [node("IsNaN", ["a"], ["nan"]), node("Where", ["nan", "zero", "a"], ["g"])]
        merged = "g"
    if merge:
        nodes += [
            node("Transpose", [merged], ["t"], perm=[0, 2, 1, 3]),
            node("Reshape", ["t", "so"], ["y"]),
        ]
        out_shape = (B, S, H * DV)
    else:
        nodes.append(node("Identity", [merged], ["y"]))
        out_shape = (B, H, S, DV)
    inputs = {"q": (B, S, H * D), "k": (B, T, KV * D), "v": (B, T, KV * DV)}
    if mask:
        inputs["m"] = (B, 1, 1, T)
    model = onnx_model(nodes, inputs, {"y": out_shape}, inits, opset=23)
    feeds = {
        "q": rand((B, S, H * D), 1),
        "k": rand((B, T, KV * D), 2),
        "v": rand((B, T, KV * DV), 3),
    }
    if mask:
        feeds["m"] = rand((B, 1, 1, T), 4)
    return model, feeds


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("mask", [False, True])
def test_heads_are_read_in_place_and_results_unchanged(guard, mask):
    model, feeds = _model(guard, mask)
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    attention = [n for n in graph.nodes if n.op == "Attention"]
    assert len(attention) == 1 and attention[0].attrs["q_num_heads"] == H
    assert attention[0].attrs["kv_num_heads"] == KV
    assert not [n for n in graph.nodes if n.op == "Transpose"]
    want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)[0]
    got = run_emulated(model, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_heads_output_kept_when_the_merge_is_missing():
    model, feeds = _model(guard=False, mask=True, merge=False)
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    assert [n for n in graph.nodes if n.op == "Attention"][0].attrs["q_num_heads"] == H
    want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)[0]
    np.testing.assert_allclose(run_emulated(model, feeds)[0], want, rtol=1e-5, atol=1e-6)
