# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""parse_onnx's input_shapes is checked against the model's declared inputs at parse time:
known name, ints >= 0, the declared rank, every fixed dim as declared (issue #17: a wrong
rank or channel count used to be accepted and then blamed on the target)."""

import re

import numpy as np
import pytest
from onnx import TensorProto, helper, load_from_string

import graphkiln
from conftest import make_model
from graphkiln.cli.common import EXAMPLE_MODEL


def _symbolic_conv_model() -> tuple[bytes, np.ndarray]:
    """The model y = relu(conv(x, w)), x: f32[N,3,H,W] (batch and spatial dims symbolic),
    and w."""
    w = np.random.default_rng(0).standard_normal((2, 3, 1, 1)).astype(np.float32)
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, "H", "W"])],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel())],
    )
    return model.SerializeToString(), w


def test_example_model_refuses_a_wrong_rank_at_parse_time():
    with pytest.raises(ValueError) as info:
        graphkiln.parse_onnx(EXAMPLE_MODEL, input_shapes={"image": [1, 3, 32]})
    msg = str(info.value)
    assert "'image'" in msg and "[1, 3, 32]" in msg and "rank 3" in msg
    assert "image: f32[1,3,32,32], rank 4" in msg


def test_example_model_refuses_a_wrong_channel_count_at_parse_time():
    with pytest.raises(ValueError) as info:
        graphkiln.parse_onnx(EXAMPLE_MODEL, input_shapes={"image": [1, 4, 32, 32]})
    msg = str(info.value)
    assert "dim 1 is 4" in msg and "fixed at 3" in msg and "image: f32[1,3,32,32]" in msg


def test_example_model_takes_its_declared_shape():
    program = graphkiln.parse_onnx(EXAMPLE_MODEL, input_shapes={"image": (1, 3, 32, 32)})
    assert str(program.get_parameter_shapes()["image"]) == "f32[1,3,32,32]"


def test_symbolic_dims_may_be_set_and_the_model_runs():
    data, w = _symbolic_conv_model()
    program = graphkiln.parse_onnx_buffer(data, input_shapes={"x": [2, 3, 5, np.int64(4)]})
    assert str(program.get_parameter_shapes()["x"]) == "f32[2,3,5,4]"
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 4)).astype(np.float32)
    (y,) = program.compile("ref").run({"x": x})
    expected = np.maximum(np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0]), 0)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_a_fixed_dim_error_names_the_symbolic_dims_that_may_change():
    data, _ = _symbolic_conv_model()
    with pytest.raises(ValueError) as info:
        graphkiln.parse_onnx_buffer(data, input_shapes={"x": [1, 4, 8, 8]})
    msg = str(info.value)
    assert "x: f32[N,3,H,W]" in msg and "dim 1 is 4" in msg
    assert "symbolic dims only (here: 0 (N), 2 (H), 3 (W))" in msg


def test_a_wrong_rank_against_symbolic_dims_is_refused():
    data, _ = _symbolic_conv_model()
    with pytest.raises(ValueError, match=re.escape("declares x: f32[N,3,H,W], rank 4")):
        graphkiln.parse_onnx_buffer(data, input_shapes={"x": [1, 3, 8]})


def test_unknown_input_name_lists_the_model_inputs():
    with pytest.raises(ValueError) as info:
        graphkiln.parse_onnx(EXAMPLE_MODEL, input_shapes={"x": [1, 3, 32, 32]})
    msg = str(info.value)
    assert "['x']" in msg and "not inputs of the model" in msg
    assert "inputs: image: f32[1,3,32,32]" in msg


def test_an_initializer_listed_as_input_is_not_an_input_to_shape():
    data, _ = _symbolic_conv_model()
    model = load_from_string(data)
    model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3, 1, 1]))
    with pytest.raises(ValueError, match=r"names \['w'\].*inputs: x: f32\[N,3,H,W\]\)"):
        graphkiln.parse_onnx_buffer(model.SerializeToString(), input_shapes={"w": [2, 3, 1, 1]})


@pytest.mark.parametrize(
    "dims, error, text",
    [
        ([1, 3, 8, 8.5], TypeError, "dims must be ints, got 8.5"),
        ([1, 3, "H", 8], TypeError, "dims must be ints, got 'H'"),
        ([1, 3, True, 8], TypeError, "dims must be ints, got True"),
        (8, TypeError, "expected a list of ints"),
        ("1,3,8,8", TypeError, "expected a list of ints"),
        ([-1, 3, 8, 8], ValueError, "dims must be >= 0"),
    ],
)
def test_dims_that_are_not_non_negative_ints_are_refused(dims, error, text):
    data, _ = _symbolic_conv_model()
    with pytest.raises(error, match=re.escape(text)) as info:
        graphkiln.parse_onnx_buffer(data, input_shapes={"x": dims})
    assert "x: f32[N,3,H,W]" in str(info.value)


def test_an_input_without_a_declared_shape_takes_any_rank():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    program = graphkiln.parse_onnx_buffer(model.SerializeToString(), input_shapes={"x": [2, 3, 4]})
    assert str(program.get_parameter_shapes()["x"]) == "f32[2,3,4]"


def test_a_sequence_input_is_not_shaped():
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2])
    model = make_model(
        [helper.make_node("SequenceLength", ["s"], ["n"])],
        [seq],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])],
    )
    with pytest.raises(ValueError, match="'s' is sequence_type, not a tensor"):
        graphkiln.parse_onnx_buffer(model.SerializeToString(), input_shapes={"s": [2]})
