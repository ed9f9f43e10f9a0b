# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Small ONNX models for the command-line tests, built with onnx.helper: ops the cpu target
lacks (If with subgraphs, Bernoulli), an op of another domain, an input with a symbolic dim."""

import onnx
from onnx import TensorProto as T
from onnx import helper as h


def _model(nodes, inputs, outputs, initializers=(), opsets=(("", 17),)):
    graph = h.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return h.make_model(graph, opset_imports=[h.make_opsetid(d, v) for d, v in opsets])


def if_model() -> onnx.ModelProto:
    """y = relu(x) if sum(x) > 0 else -x; the branches read x from the outer graph."""

    def out(name):
        return h.make_tensor_value_info(name, T.FLOAT, [1, 4])

    then_branch = h.make_graph(
        [h.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [], [out("t")]
    )
    else_branch = h.make_graph(
        [h.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [], [out("e")]
    )
    nodes = [
        h.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
        h.make_node("Constant", [], ["zero"], value=h.make_tensor("z", T.FLOAT, [], [0.0])),
        h.make_node("Greater", ["s", "zero"], ["c"]),
        h.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch),
    ]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [1, 4])], [out("y")])


def bernoulli_model() -> onnx.ModelProto:
    """Seeded draws with probabilities x: f32[2] (Bernoulli has no cpu kernel)."""
    return _model(
        [h.make_node("Bernoulli", ["x"], ["yh"], seed=1.0)],
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("yh", T.FLOAT, [2])],
    )


def microsoft_model() -> onnx.ModelProto:
    """relu(x), then com.microsoft::CDist (an onnxruntime contrib op graphkiln does not import)."""
    return _model(
        [
            h.make_node("Relu", ["x"], ["r"]),
            h.make_node("CDist", ["r", "r"], ["y"], domain="com.microsoft"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
        opsets=(("", 17), ("com.microsoft", 1)),
    )


def microsoft_gelu_model() -> onnx.ModelProto:
    """com.microsoft::FastGelu(relu(x)): a contrib op graphkiln imports."""
    return _model(
        [
            h.make_node("Relu", ["x"], ["r"]),
            h.make_node("FastGelu", ["r"], ["y"], domain="com.microsoft"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
        opsets=(("", 17), ("com.microsoft", 1)),
    )


def symbolic_model() -> onnx.ModelProto:
    """z = relu(x) + b, x: f32[N,3] (N symbolic), b: f32[3]."""
    return _model(
        [h.make_node("Relu", ["x"], ["y"]), h.make_node("Add", ["y", "b"], ["z"])],
        [
            h.make_tensor_value_info("x", T.FLOAT, ["N", 3]),
            h.make_tensor_value_info("b", T.FLOAT, [3]),
        ],
        [h.make_tensor_value_info("z", T.FLOAT, ["N", 3])],
    )


def save(model: onnx.ModelProto, tmp_path, name: str) -> str:
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)
