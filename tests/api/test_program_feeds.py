# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Program.run checks its feeds and says what was expected."""

import numpy as np
import pytest

import graphkiln


@pytest.fixture
def prog(add_relu_model):
    return graphkiln.parse_onnx_buffer(add_relu_model.SerializeToString(), default_dim=None).compile("ref")


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
    with pytest.raises(ValueError, match=r"expected shape \['N', 3\]"):
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
