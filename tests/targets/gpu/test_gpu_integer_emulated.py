# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The integer products (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv) on the gpu
target: host steps through the cpu kernels (targets/native/lower_integer.py,
targets/gpu/host_steps.py) between gpu kernels, run on the numpy model of the gpu kernels
(host steps there call the cpu core) against ref, bit-exact for the integer outputs."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu import table
from graphkiln.targets.gpu.host_steps import host_ops
from graphkiln.targets.gpu.target import GpuTarget, lower_plan
from gpu_testing import compare, run_emulated

U8, I8, F, I32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT, TensorProto.INT32


def _model(nodes, inputs, outputs, initializers) -> bytes:
    graph = helper.make_graph(nodes, "m", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return model.SerializeToString()


def _const(name, kind, array):
    return helper.make_tensor(name, kind, array.shape, array.ravel().tolist())


def qlinear_matmul_then_dequantize(rng):
    """QLinearMatMul (u8, per-column b scale / zero point) on the host, its DequantizeLinear
    and a Relu on the gpu."""
    m, k, n = 12, 40, 9
    nodes = [
        helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "sy", "zy"], ["d"]),
        helper.make_node("Relu", ["d"], ["out"]),
    ]
    inits = [
        _const("sa", F, np.array([0.011], np.float32)),
        _const("za", U8, np.array([120], np.uint8)),
        _const("b", U8, rng.integers(0, 256, size=(k, n)).astype(np.uint8)),
        _const("sb", F, rng.uniform(0.002, 0.01, size=(n,)).astype(np.float32)),
        _const("zb", U8, rng.integers(100, 150, size=(n,)).astype(np.uint8)),
        _const("sy", F, np.array([0.05], np.float32)),
        _const("zy", U8, np.array([128], np.uint8)),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("a", U8, [2, m, k])],
        [
            helper.make_tensor_value_info("q", U8, [2, m, n]),
            helper.make_tensor_value_info("out", F, [2, m, n]),
        ],
        inits,
    )
    return model, {"a": rng.integers(0, 256, size=(2, m, k)).astype(np.uint8)}


def conv_integer_then_cast(rng):
    """ConvInteger (i8, per-channel w zero point, pads and strides) on the host, a Cast to
    float and a Relu on the gpu."""
    nodes = [
        helper.make_node(
            "ConvInteger", ["x", "w", "zx", "zw"], ["acc"], pads=[1, 1, 1, 1], strides=[2, 1]
        ),
        helper.make_node("Cast", ["acc"], ["f"], to=F),
        helper.make_node("Relu", ["f"], ["out"]),
    ]
    inits = [
        _const("w", I8, rng.integers(-128, 128, size=(4, 3, 3, 3)).astype(np.int8)),
        _const("zx", I8, np.array(5, np.int8)),
        _const("zw", I8, rng.integers(-10, 10, size=(4,)).astype(np.int8)),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", I8, [1, 3, 9, 8])],
        [
            helper.make_tensor_value_info("acc", I32, [1, 4, 5, 8]),
            helper.make_tensor_value_info("out", F, [1, 4, 5, 8]),
        ],
        inits,
    )
    return model, {"x": rng.integers(-128, 128, size=(1, 3, 9, 8)).astype(np.int8)}


CASES = {
    "qlinear_matmul_then_dequantize": (qlinear_matmul_then_dequantize, "QLinearMatMul"),
    "conv_integer_then_cast": (conv_integer_then_cast, "ConvInteger"),
}


def test_integer_products_are_host_ops():
    ops = host_ops(table.LOWERINGS)
    for op in ("MatMulInteger", "QLinearMatMul", "ConvInteger", "QLinearConv"):
        assert op in ops


@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_gpu_matches_ref(name):
    make, op = CASES[name]
    model, feeds = make(np.random.default_rng(3))
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    kernels = [s.kernel for s in lower_plan(graph).steps]
    assert f"Host.{op}" in kernels, kernels
    want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    got = run_emulated(model, feeds)
    np.testing.assert_array_equal(got[0], want[0])  # the integer output: exact
    compare(got, want, rtol=1e-6, atol=1e-6)
