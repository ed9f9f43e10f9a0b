# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Tensor size limits: huge declared or inferred tensors are refused before allocation."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphkiln
from conftest import make_model

F = TensorProto.FLOAT


def _buffer(nodes, inputs, outputs, inits=()):
    return make_model(nodes, inputs, outputs, inits).SerializeToString()


def _declared(name, dims, raw=None):
    """A float tensor declaring `dims`, with `raw` bytes of data (none when None)."""
    t = TensorProto(name=name, data_type=F, dims=dims)
    if raw is not None:
        t.raw_data = raw
    return t


def _identity_of(init):
    return _buffer(
        [helper.make_node("Identity", [init.name], ["y"])],
        [],
        [helper.make_tensor_value_info("y", init.data_type, None)],
        [init],
    )


def test_initializer_with_enormous_dims_is_refused_by_name_and_size():
    w = _declared("huge_w", [1 << 20, 1 << 20])
    with pytest.raises(
        graphkiln.ModelError,
        match=r"'huge_w' of shape \[1048576, 1048576\] would take "
        r"4,398,046,511,104 bytes, over the limit of 4,294,967,296",
    ):
        graphkiln.parse_onnx_buffer(_identity_of(w))


def test_raw_data_shorter_than_declared_is_refused():
    w = _declared("w", [3], b"\0" * 8)
    with pytest.raises(
        graphkiln.ModelError, match=r"'w': raw_data holds 8 bytes but f32\[3\] needs 12"
    ):
        graphkiln.parse_onnx_buffer(_identity_of(w))


def test_sparse_initializer_with_huge_dense_shape_is_refused():
    values = numpy_helper.from_array(np.float32([1.0]), "sp")
    indices = numpy_helper.from_array(np.int64([0]), "sp_i")
    model = make_model(
        [helper.make_node("Identity", ["sp"], ["y"])],
        [],
        [helper.make_tensor_value_info("y", F, None)],
    )
    model.graph.sparse_initializer.append(
        helper.make_sparse_tensor(values, indices, [1 << 31, 1 << 31])
    )
    with pytest.raises(graphkiln.ModelError, match="sparse tensor 'sp' of shape .* over the limit"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())


def _shape_maker(op, big):
    i64 = lambda name, v: numpy_helper.from_array(np.int64(v), name)  # noqa: E731
    out = [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)]
    x = [helper.make_tensor_value_info("x", F, [1, 1])]
    if op == "ConstantOfShape":
        return _buffer([helper.make_node(op, ["s"], ["y"])], [], out, [i64("s", [big, big])])
    if op == "Expand":
        return _buffer([helper.make_node(op, ["x", "s"], ["y"])], x, out, [i64("s", [big, big])])
    if op == "Tile":
        return _buffer([helper.make_node(op, ["x", "r"], ["y"])], x, out, [i64("r", [big, big])])
    return _buffer(
        [helper.make_node(op, ["a", "b", "c"], ["y"])],
        [],
        out,
        [i64("a", 0), i64("b", big * big), i64("c", 1)],
    )


@pytest.mark.parametrize("op", ["ConstantOfShape", "Expand", "Tile", "Range"])
def test_shape_making_ops_with_huge_constant_sizes_are_refused(op):
    with pytest.raises(
        graphkiln.ModelError, match=rf"\({op}, opset 17\): output 'y' .* over the limit"
    ):
        graphkiln.parse_onnx_buffer(_shape_maker(op, 1 << 20))


def test_declared_input_larger_than_the_limit_is_refused():
    data = _buffer(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", F, [1 << 40])],
        [helper.make_tensor_value_info("y", F, None)],
    )
    with pytest.raises(
        graphkiln.ModelError,
        match=r"input 'x' \(f32\) of shape \[1099511627776\] .* over the limit",
    ):
        graphkiln.parse_onnx_buffer(data)


def test_limit_is_configurable_by_argument_and_environment(monkeypatch):
    w = numpy_helper.from_array(np.zeros(256, np.float32), "w")  # 1 KiB
    data = _identity_of(w)
    graphkiln.parse_onnx_buffer(data)
    graphkiln.parse_onnx_buffer(data, max_tensor_bytes=1024)
    with pytest.raises(graphkiln.ModelError, match="1,024 bytes, over the limit of 1,000"):
        graphkiln.parse_onnx_buffer(data, max_tensor_bytes=1000)
    monkeypatch.setenv("GRAPHKILN_MAX_TENSOR_BYTES", "512")
    with pytest.raises(graphkiln.ModelError, match="over the limit of 512"):
        graphkiln.parse_onnx_buffer(data)
    graphkiln.parse_onnx_buffer(data, max_tensor_bytes=4096)  # the argument wins
    monkeypatch.setenv("GRAPHKILN_MAX_TENSOR_BYTES", "lots")
    with pytest.raises(ValueError, match="GRAPHKILN_MAX_TENSOR_BYTES='lots' is not an integer"):
        graphkiln.parse_onnx_buffer(data)


@pytest.mark.parametrize(
    "bad, error", [(0, ValueError), (-5, ValueError), ("1k", TypeError), (2.5, TypeError)]
)
def test_bad_limit_arguments(add_relu_model, bad, error):
    with pytest.raises(error, match="max_tensor_bytes"):
        graphkiln.parse_onnx_buffer(add_relu_model.SerializeToString(), max_tensor_bytes=bad)


def test_limit_variable_is_declared():
    from graphkiln import env

    assert "GRAPHKILN_MAX_TENSOR_BYTES" in env.VARIABLES
