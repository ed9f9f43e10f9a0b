# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Shared fixtures: small ONNX models built with onnx.helper."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper


def make_model(nodes, inputs, outputs, initializers=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.fixture
def add_relu_model() -> onnx.ModelProto:
    """y = relu(x + w), x: f32[N,3]."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [3], [0.5, -2.0, 3.0])
    return make_model(
        [helper.make_node("Add", ["x", "w"], ["s"], name="add"),
         helper.make_node("Relu", ["s"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [w])


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
