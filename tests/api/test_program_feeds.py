# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Program.run checks its feeds and says what was expected."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model


@pytest.fixture
def prog(add_relu_model):
    return graphkiln.parse_onnx_buffer(
        add_relu_model.SerializeToString(), default_dim=None
    ).compile("ref")


def test_missing_and_unknown_names(prog):
    with pytest.raises(ValueError, match=r"missing \['x'\]"):
        prog.run({})
    with pytest.raises(ValueError, match=r"unknown \['z'\]"):
        prog.run({"x": np.ones((1, 3), np.float32), "z": np.ones(1)})


def test_wrong_dtype_rank_and_shape(prog):
    with pytest.raises(ValueError, match="expected dtype f32.*got float64"):
        prog.run({"x": np.ones((2, 3))})
    with pytest.raises(ValueError, match="expected rank 2"):
        prog.run({"x": np.ones(3, np.float32)})
    with pytest.raises(
        ValueError,
        match=r"^input 'x': dim 1 is fixed at 3; got 4 \(shape \[2, 4\], "
        r"expected f32\[N,3\]\)$",
    ):
        prog.run({"x": np.ones((2, 4), np.float32)})


def test_non_arrays_are_type_errors(prog):
    with pytest.raises(TypeError, match="numpy array"):
        prog.run({"x": [[1.0, 2.0, 3.0]]})
    with pytest.raises(TypeError, match="dict"):
        prog.run([np.ones((1, 3), np.float32)])


def test_non_contiguous_and_read_only_inputs_work(prog, rng):
    base = rng.standard_normal((3, 6)).astype(np.float32)
    x = base[:, ::2]
    x.setflags(write=False)
    (y,) = prog.run({"x": x})
    np.testing.assert_array_equal(y, np.maximum(x + np.float32([0.5, -2.0, 3.0]), 0))


def test_uncompiled_program_says_how_to_compile(add_relu_model):
    prog = graphkiln.parse_onnx_buffer(add_relu_model.SerializeToString())
    with pytest.raises(graphkiln.GraphkilnError, match="compile"):
        prog.run({"x": np.ones((1, 3), np.float32)})


def test_unknown_target_lists_available():
    with pytest.raises(ValueError, match="available: .*ref"):
        graphkiln.get_target("tpu")


def test_introspection(prog):
    assert prog.get_parameter_names() == ["x"]
    assert [str(t) for t in prog.get_output_shapes()] == ["f32[N,3]"]
    assert "Relu" in str(prog)


def _single_input_program(dims, dtype=TensorProto.FLOAT):
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", dtype, dims)],
        [helper.make_tensor_value_info("y", dtype, dims)],
    )
    return graphkiln.parse_onnx_buffer(model.SerializeToString()).compile("ref")


def test_scalars_for_a_rank0_input():
    prog = _single_input_program([])
    for feed in (np.float32(1.5), np.array(1.5, np.float32), 1.5, 2):
        (y,) = prog.run({"x": feed})
        assert y.shape == () and y.dtype == np.float32 and y == np.float32(feed)
    with pytest.raises(ValueError, match=r"expected dtype f32 \(float32\), got float64"):
        prog.run({"x": np.float64(1.5)})  # a numpy scalar keeps its dtype, like an array
    for feed in (True, "1.5", None, b"x"):
        with pytest.raises(TypeError, match=r"expected a numpy array of f32\[\]"):
            prog.run({"x": feed})
    with pytest.raises(ValueError, match=r"expected rank 0 f32\[\], got shape \[1\]"):
        prog.run({"x": np.ones(1, np.float32)})


def test_python_int_too_big_for_the_input_dtype():
    prog = _single_input_program([], TensorProto.INT8)
    assert prog.run({"x": 7})[0] == 7
    with pytest.raises(ValueError, match=r"300 does not fit i8\[\]"):
        prog.run({"x": 300})


def test_numpy_scalar_for_a_tensor_input_is_a_rank_error(prog):
    with pytest.raises(ValueError, match=r"expected rank 2 f32\[N,3\], got shape \[\]"):
        prog.run({"x": np.float32(1)})


def test_object_arrays_for_numeric_inputs_are_refused(prog):
    with pytest.raises(ValueError, match="expected dtype f32 .*got object"):
        prog.run({"x": np.array([[1.0, 2.0, 3.0]], dtype=object)})


def test_string_inputs_take_str_elements_only():
    prog = _single_input_program([2], TensorProto.STRING)
    for feed in (np.array(["a", "bc"]), np.array(["a", "bc"], dtype=object)):
        assert list(prog.run({"x": feed})[0]) == ["a", "bc"]
    with pytest.raises(
        TypeError, match="expected str elements for str\\[2\\], got an element of type int"
    ):
        prog.run({"x": np.array(["a", 2], dtype=object)})


def test_fortran_order_and_masked_arrays(prog, rng):
    x = np.asfortranarray(rng.standard_normal((4, 3)).astype(np.float32))
    assert x.flags.f_contiguous and not x.flags.c_contiguous
    (y,) = prog.run({"x": x})
    np.testing.assert_array_equal(y, np.maximum(x + np.float32([0.5, -2.0, 3.0]), 0))
    with pytest.raises(TypeError, match="masked arrays are not supported"):
        prog.run({"x": np.ma.masked_array(x, mask=x < 0)})
