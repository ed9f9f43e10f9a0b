# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX import: inputs, shapes, errors for bad and unsupported models."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model


def test_import_and_run_matches_numpy(add_relu_model, rng):
    prog = graphkiln.parse_onnx_buffer(add_relu_model.SerializeToString(), default_dim=None)
    assert prog.get_parameter_names() == ["x"]
    assert str(prog.get_parameter_shapes()["x"]) == "f32[N,3]"
    x = rng.standard_normal((5, 3)).astype(np.float32)
    (y,) = prog.compile("ref").run({"x": x})
    np.testing.assert_array_equal(y, np.maximum(x + np.float32([0.5, -2.0, 3.0]), 0))


def test_default_dim_and_input_shapes_fix_symbolic_dims(add_relu_model):
    data = add_relu_model.SerializeToString()
    assert str(graphkiln.parse_onnx_buffer(data).get_parameter_shapes()["x"]) == "f32[N,3]"
    assert (
        str(graphkiln.parse_onnx_buffer(data, default_dim=1).get_parameter_shapes()["x"])
        == "f32[1,3]"
    )
    prog = graphkiln.parse_onnx_buffer(data, input_shapes={"x": [7, 3]})
    assert str(prog.get_output_shapes()[0]) == "f32[7,3]"
    with pytest.raises(ValueError, match="not inputs of the model"):
        graphkiln.parse_onnx_buffer(data, input_shapes={"nope": [1]})


def test_unsupported_operator_names_op_node_domain_and_opset():
    model = make_model(
        [helper.make_node("FancyOp", ["x"], ["y"], name="n1", domain="my.domain")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model.opset_import.append(helper.make_opsetid("my.domain", 3))
    with pytest.raises(graphkiln.UnsupportedOperatorError) as info:
        graphkiln.parse_onnx_buffer(model.SerializeToString())
    err = info.value
    assert (err.op, err.node, err.domain, err.opset) == ("FancyOp", "n1", "my.domain", 3)
    assert "FancyOp" in str(err) and "n1" in str(err) and "my.domain" in str(err)


def test_unknown_default_domain_op_is_unsupported():
    model = make_model(
        [helper.make_node("Relux", ["x"], ["y"], name="r")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(graphkiln.UnsupportedOperatorError, match="'Relux'.*opset 17"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00\x01garbage\xff\xff", "not an ONNX model"),
        (b"", "no graph"),
    ],
)
def test_malformed_bytes_raise_model_error(data, message):
    with pytest.raises(graphkiln.ModelError, match=message):
        graphkiln.parse_onnx_buffer(data)


def test_undefined_input_and_missing_output_are_model_errors():
    model = make_model(
        [helper.make_node("Relu", ["nowhere"], ["y"], name="r")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(graphkiln.ModelError, match="reads 'nowhere'"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())
    model = make_model(
        [],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(graphkiln.ModelError, match="output 'y' is not produced"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())


def test_missing_opset_and_too_old_opset_are_model_errors(add_relu_model):
    model = onnx.ModelProto()
    model.CopyFrom(add_relu_model)
    model.opset_import[0].version = 3
    with pytest.raises(graphkiln.ModelError, match="opset 3 is outside"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())
    del model.opset_import[:]
    with pytest.raises(graphkiln.ModelError, match="no opset"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())


def test_nodes_out_of_order_are_sorted(rng):
    model = make_model(
        [helper.make_node("Relu", ["s"], ["y"]), helper.make_node("Add", ["x", "x"], ["s"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    x = rng.standard_normal(4).astype(np.float32)
    (y,) = graphkiln.parse_onnx_buffer(model.SerializeToString()).compile("ref").run({"x": x})
    np.testing.assert_array_equal(y, np.maximum(2 * x, 0))


def test_cycle_is_a_model_error():
    model = make_model(
        [helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4])],
    )
    with pytest.raises(graphkiln.ModelError, match="cycle"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(graphkiln.ModelError, match="cannot read model"):
        graphkiln.parse_onnx(tmp_path / "absent.onnx")
