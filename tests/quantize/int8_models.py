# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Float models for the int8 quantization tests, built with onnx.helper from seeded random
weights (never all zeros), and their calibration samples."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CNN_INPUT = [2, 3, 12, 12]
MLP_INPUT = [4, 16]


def _weight(rng, name, shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _model(nodes, x_shape, y_shape, initializers, opset):
    graph = helper.make_graph(
        nodes,
        "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def cnn(seed=1, opset=17, activation="Relu") -> onnx.ModelProto:
    """Conv -> Relu -> Conv -> GlobalAveragePool -> Flatten -> Gemm (transB=1): 10 outputs.
    activation="Clip": Clip(0, 6) (ReLU6, as MobileNets) instead of the Relu."""
    rng = np.random.default_rng(seed)
    bounds = ["low", "high"] if activation == "Clip" else []
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
        helper.make_node(activation, ["c1", *bounds], ["r1"], f"{activation.lower()}1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], "conv2", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["pooled"], "pool"),
        helper.make_node("Flatten", ["pooled"], ["flat"], "flatten"),
        helper.make_node("Gemm", ["flat", "wg", "bg"], ["y"], "gemm", transB=1),
    ]
    weights = [
        _weight(rng, "w1", [8, 3, 3, 3]),
        _weight(rng, "b1", [8], 0.1),
        _weight(rng, "w2", [16, 8, 3, 3]),
        _weight(rng, "b2", [16], 0.1),
        _weight(rng, "wg", [10, 16]),
        _weight(rng, "bg", [10], 0.1),
    ]
    if bounds:
        weights += [
            numpy_helper.from_array(np.array(v, np.float32), n) for n, v in zip(bounds, (0, 6))
        ]
    return _model(nodes, CNN_INPUT, [CNN_INPUT[0], 10], weights, opset)


def mlp(seed=2, opset=17) -> onnx.ModelProto:
    """MatMul -> Add -> Relu -> MatMul: [4, 16] -> [4, 8]."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], "matmul1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], "add1"),
        helper.make_node("Relu", ["hb"], ["r"], "relu1"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], "matmul2"),
    ]
    weights = [
        _weight(rng, "w1", [16, 32]),
        _weight(rng, "b1", [32], 0.1),
        _weight(rng, "w2", [32, 8]),
    ]
    return _model(nodes, MLP_INPUT, [MLP_INPUT[0], 8], weights, opset)


def samples(shape, count=12, seed=3) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(count)]
