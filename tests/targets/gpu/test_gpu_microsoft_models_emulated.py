# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The project's BERT / GPT-2 exports as onnxruntime's transformer optimizer rewrites them
(com.microsoft Attention, EmbedLayerNormalization, SkipLayerNormalization, BiasGelu,
FastGelu: tests/frontends/data/*_ort_optimized.onnx, see tests/frontends/test_microsoft_ops.py)
through the gpu target's plans, run by the numpy model of the gpu kernels
(plan_emulator.py), against onnxruntime's recorded outputs at two shapes."""

import os

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget
from gpu_testing import EmulatedPlan

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "frontends", "data")


@pytest.mark.parametrize("name", ["bert_tiny", "gpt2_tiny"])
def test_optimized_model_on_emulated_gpu_matches_onnxruntime(name):
    path = os.path.join(DATA, f"{name}_ort_optimized.onnx")
    program = gk.parse_onnx(path, default_dim=None)
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    executable = GpuExecutable(graph, plan_factory=EmulatedPlan)
    data = np.load(os.path.join(DATA, f"{name}_ort_optimized.npz"))
    shapes = sorted({k.split(":")[1] for k in data.files if k.startswith("input:")})
    assert len(shapes) == 2
    for j in shapes:
        feeds = {k.split(":", 2)[2]: data[k] for k in data.files if k.startswith(f"input:{j}:")}
        expected = [data[k] for k in data.files if k.startswith(f"output:{j}:")]
        got = executable.run([feeds[v.name] for v in graph.inputs])
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-3 * float(np.abs(e).max()))
