# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Input dims the model does not fix stay symbolic at import (dim_param names, `?`, no
value, -1), run at several shapes on ref and cpu, and feeds are checked against them."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from graphkiln.ir import parse_graph, print_graph


def _vi(name, dims, elem=TensorProto.FLOAT):
    """A value info built by hand: int dims are dim_value (-1 included), str dim_param,
    None a dim with neither."""
    vi = helper.make_tensor_value_info(name, elem, None)
    shape = vi.type.tensor_type.shape
    for d in dims:
        dim = shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif d is not None:
            dim.dim_param = d
    return vi


def _model(a_dims, b_dims):
    """y = relu(a * b + w), w: f32[4] broadcast on the last axis."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], [0.5, -1.0, 2.0, -0.25])
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["a", "b"], ["m"]),
            helper.make_node("Add", ["m", "w"], ["s"]),
            helper.make_node("Relu", ["s"], ["y"]),
        ],
        "g",
        [_vi("a", a_dims), _vi("b", b_dims)],
        [_vi("y", [])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


MIXED = _model(["batch", "?", -1, 4], ["batch", None, "seq len", 4])


def test_every_kind_of_unknown_dim_stays_symbolic_with_a_valid_unique_name():
    prog = graphkiln.parse_onnx_buffer(MIXED)
    shapes = {k: str(v) for k, v in prog.get_parameter_shapes().items()}
    assert shapes == {"a": "f32[batch,a_dim1,a_dim2,4]", "b": "f32[batch,b_dim1,seq_len,4]"}
    text = str(prog)
    assert print_graph(parse_graph(text)) == text  # the names parse back


def test_generated_names_do_not_clash_with_the_models_own():
    prog = graphkiln.parse_onnx_buffer(_model(["a_dim0", None, 1, 4], ["a_dim0", 1, 1, 4]))
    assert str(prog.get_parameter_shapes()["a"]) == "f32[a_dim0,a_dim1,1,4]"
    prog = graphkiln.parse_onnx_buffer(_model([None, "a_dim1", 1, 4], [1, 1, 1, 4]))
    assert str(prog.get_parameter_shapes()["a"]) == "f32[a_dim0,a_dim1,1,4]"
    prog = graphkiln.parse_onnx_buffer(_model(["a_dim1", None, 1, 4], [1, 1, 1, 4]))
    assert str(prog.get_parameter_shapes()["a"]) == "f32[a_dim1,a_dim1_2,1,4]"


def test_default_dim_and_input_shapes_still_fix_them():
    prog = graphkiln.parse_onnx_buffer(MIXED, default_dim=1)
    assert str(prog.get_parameter_shapes()["a"]) == "f32[1,1,1,4]"
    prog = graphkiln.parse_onnx_buffer(MIXED, input_shapes={"a": [2, 3, 5, 4]})
    assert str(prog.get_parameter_shapes()["a"]) == "f32[2,3,5,4]"
    with pytest.raises(ValueError, match="default_dim must be None"):
        graphkiln.parse_onnx_buffer(MIXED, default_dim=-1)


def test_other_negative_dims_are_refused_saying_what_is_accepted():
    with pytest.raises(
        graphkiln.ModelError,
        match=r"input 'a': negative dimension -2 \(a dim is a size >= 0, or -1",
    ):
        graphkiln.parse_onnx_buffer(_model([-2, 1, 1, 4], [1, 1, 1, 4]))


def test_a_declared_zero_stays_zero_and_input_shapes_may_set_it():
    prog = graphkiln.parse_onnx_buffer(_model([0, 1, 1, 4], [0, 1, 1, 4])).compile("ref")
    assert str(prog.get_parameter_shapes()["a"]) == "f32[0,1,1,4]"
    (y,) = prog.run(
        {"a": np.ones((0, 1, 1, 4), np.float32), "b": np.ones((0, 1, 1, 4), np.float32)}
    )
    assert y.shape == (0, 1, 1, 4)
    with pytest.raises(ValueError) as info:
        prog.run({"a": np.ones((2, 1, 1, 4), np.float32), "b": np.ones((2, 1, 1, 4), np.float32)})
    assert str(info.value) == (
        "input 'a': dim 0 is fixed at 0; got 2 (shape [2, 1, 1, 4], expected f32[0,1,1,4]) "
        "(a dim declared 0 is an empty axis; if the model means 'any size' there, set it "
        "with parse_onnx(..., input_shapes=...))"
    )
    fixed = graphkiln.parse_onnx_buffer(
        _model([0, 1, 1, 4], [0, 1, 1, 4]), input_shapes={"a": [2, 1, 1, 4], "b": [2, 1, 1, 4]}
    )
    assert str(fixed.get_parameter_shapes()["a"]) == "f32[2,1,1,4]"


def _expected(a, b):
    return np.maximum(a * b + np.float32([0.5, -1.0, 2.0, -0.25]), 0)


@pytest.mark.parametrize("target", ["ref", "cpu"])
def test_runs_at_several_shapes_and_matches_numpy(target):
    if target not in graphkiln.available_targets():
        pytest.skip(f"{target} is not available")
    prog = graphkiln.parse_onnx_buffer(MIXED).compile(target)
    rng = np.random.default_rng(20)
    for batch, d1, d2 in [(1, 3, 5), (2, 1, 7), (3, 2, 1)]:
        a = rng.standard_normal((batch, d1, d2, 4)).astype(np.float32)
        b = rng.standard_normal((batch, 1, d2, 4)).astype(np.float32)  # b_dim1 = 1 broadcasts
        (y,) = prog.run({"a": a, "b": b})
        np.testing.assert_allclose(y, _expected(a, b), rtol=1e-6, atol=1e-6)


def test_feed_errors_name_the_input_dim_symbol_and_who_set_it():
    prog = graphkiln.parse_onnx_buffer(MIXED).compile("ref")
    a = np.ones((2, 3, 5, 4), np.float32)
    with pytest.raises(ValueError) as info:
        prog.run({"a": a, "b": np.ones((3, 1, 5, 4), np.float32)})
    assert str(info.value) == (
        "input 'b': dim 0 is 'batch', which input 'a' set to 2; got 3 "
        "(shape [3, 1, 5, 4], expected f32[batch,b_dim1,seq_len,4])"
    )
    with pytest.raises(ValueError) as info:
        prog.run({"a": np.ones((2, 3, 5, 3), np.float32), "b": a})
    assert str(info.value) == (
        "input 'a': dim 3 is fixed at 4; got 3 (shape [2, 3, 5, 3], "
        "expected f32[batch,a_dim1,a_dim2,4])"
    )


def test_a_symbol_repeated_in_one_input_must_agree():
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])],
        "g",
        [_vi("x", ["n", "n"])],
        [_vi("y", [])],
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    prog = graphkiln.parse_onnx_buffer(data).compile("ref")
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(prog.run({"x": x})[0], x.T)
    with pytest.raises(ValueError) as info:
        prog.run({"x": np.ones((3, 2), np.float32)})
    assert str(info.value) == (
        "input 'x': dim 1 is 'n', which dim 0 of the same input set to "
        "3; got 2 (shape [3, 2], expected f32[n,n])"
    )


def test_input_shapes_on_one_input_sets_the_shared_symbol_on_the_others():
    prog = graphkiln.parse_onnx_buffer(MIXED, input_shapes={"a": [2, 3, 5, 4]})
    assert str(prog.get_parameter_shapes()["b"]) == "f32[2,b_dim1,seq_len,4]"
    with pytest.raises(
        ValueError,
        match=r"input_shapes\['b'\] sets dim 0 \('batch'\) to 3, but "
        r"input_shapes\['a'\] sets 'batch' to 2",
    ):
        graphkiln.parse_onnx_buffer(MIXED, input_shapes={"a": [2, 3, 5, 4], "b": [3, 1, 5, 4]})


@pytest.mark.skipif("cpu" not in graphkiln.available_targets(), reason="no cpu target")
def test_a_compiled_symbolic_cpu_program_saves_loads_and_runs_at_new_shapes():
    prog = graphkiln.parse_onnx_buffer(MIXED).compile("cpu")
    rng = np.random.default_rng(21)
    a = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    b = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(prog.run({"a": a, "b": b})[0], _expected(a, b), rtol=1e-6)
    loaded = graphkiln.load_buffer(graphkiln.save_buffer(prog))
    assert (
        loaded.is_compiled
        and str(loaded.get_parameter_shapes()["a"]) == "f32[batch,a_dim1,a_dim2,4]"
    )
    for shape in [(2, 3, 5, 4), (1, 2, 6, 4)]:
        a = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(loaded.run({"a": a, "b": b})[0], _expected(a, b), rtol=1e-6)
