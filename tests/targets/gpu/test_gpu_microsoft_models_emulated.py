# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The project's BERT / GPT-2 exports as onnxruntime's transformer optimizer rewrites them
(com.microsoft Attention, EmbedLayerNormalization, SkipLayerNormalization, BiasGelu,
FastGelu: tests/frontends/data/*_ort_optimized.onnx, see tests/frontends/test_microsoft_ops.py)
through the gpu target's plans, run by the numpy model of the gpu kernels
(plan_emulator.py), against onnxruntime's recorded outputs at two shapes; and BiasSplitGelu,
NhwcConv and GatherBlockQuantized the same way, against ref."""

import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

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


def _one_node(op, inputs, feeds, consts, attrs=None):
    node = helper.make_node(op, inputs, ["y"], domain="com.microsoft", **(attrs or {}))
    graph = helper.make_graph(
        [node],
        op.lower(),
        [
            helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for k, v in feeds.items()
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _layout_cases():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    image = rng.standard_normal((1, 6, 5, 4)).astype(np.float32)
    table = rng.integers(0, 256, (12, 16)).astype(np.uint8)  # 32 4-bit codes a row
    return {
        "bias_split_gelu": (
            _one_node("BiasSplitGelu", ["x", "b"], {"x": x}, {"b": x[0, 0]}),
            {"x": x},
        ),
        "nhwc_conv": (
            _one_node(
                "NhwcConv",
                ["x", "w"],
                {"x": image},
                {"w": rng.standard_normal((3, 3, 3, 4)).astype(np.float32)},
                {"pads": [1, 1, 1, 1], "strides": [2, 1]},
            ),
            {"x": image},
        ),
        "gather_block_quantized": (
            _one_node(
                "GatherBlockQuantized",
                ["table", "ids", "scales", "zeros"],
                {"ids": np.array([[3, 0], [11, 3]], np.int64)},
                {
                    "table": table,
                    "scales": rng.uniform(0.01, 0.1, (12, 2)).astype(np.float32),
                    "zeros": rng.integers(0, 256, (12, 1)).astype(np.uint8),
                },
                {"block_size": 16, "bits": 4},
            ),
            {"ids": np.array([[3, 0], [11, 3]], np.int64)},
        ),
    }


@pytest.mark.parametrize("name", ["bias_split_gelu", "nhwc_conv", "gather_block_quantized"])
def test_layout_and_table_ops_lower_for_gpu_and_match_ref(name):
    """BiasSplitGelu, NhwcConv and GatherBlockQuantized (4-bit codes two a byte) as the gpu
    target plans them, run by the numpy model of its kernels, equal ref."""
    model, feeds = _layout_cases()[name]
    program = gk.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
    (want,) = program.compile("ref").run(feeds)
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    executable = GpuExecutable(graph, plan_factory=EmulatedPlan)
    (got,) = executable.run([feeds[v.name] for v in graph.inputs])
    assert got.shape == np.asarray(want).shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
