# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""If compiled in line on cpu (targets/native/lower_control.py, src/cpu/control.cpp): the
C++ executor reads the condition and skips the branch not taken; no node runs on ref."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand


def _info(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _branch(nodes, out, shape, name):
    return helper.make_graph(nodes, name, [], [_info(out, shape)])


def _steps(program) -> list[str]:
    plans = list(program._executable._plans.values())
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


def _if_conv_model(shape=(1, 2, 6, 6)) -> bytes:
    """Conv -> h (channels-last inside the plan); If(sum(x) > 0): then Relu(h) * w, else
    Sigmoid(h) - h; the result plus h. Both branches read h (a conv output) and w."""
    then_g = _branch(
        [node("Relu", ["h"], ["t_r"]), node("Mul", ["t_r", "w"], ["t"])], "t", None, "then"
    )
    else_g = _branch(
        [node("Sigmoid", ["h"], ["e_s"]), node("Sub", ["e_s", "h"], ["e"])], "e", None, "else"
    )
    nodes = [
        node("Conv", ["x", "k"], ["h"], pads=[1, 1, 1, 1]),
        node("ReduceSum", ["x"], ["s"], keepdims=0),
        node("Greater", ["s", "zero"], ["c"]),
        node("If", ["c"], ["r"], then_branch=then_g, else_branch=else_g),
        node("Add", ["r", "h"], ["y"]),
    ]
    n, c, hh, ww = shape
    return onnx_model(
        nodes,
        {"x": ("N", c, hh, ww)},
        {"y": ("N", 4, hh, ww)},
        {
            "k": rand((4, c, 3, 3), seed=1),
            "w": rand((1, 4, 1, 1), seed=2),
            "zero": np.array(0, np.float32),
        },
    )


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["then", "else"])
@pytest.mark.parametrize("batch", [1, 3])
def test_if_runs_natively_both_ways(sign, batch):
    model = _if_conv_model()
    x = np.abs(rand((batch, 2, 6, 6), seed=3 + batch)) * sign
    (y,) = check_cpu(model, {"x": x})  # no fallback: compile fails if the If is refused
    program = gk.parse_onnx_buffer(model).compile("cpu")
    program.run({"x": x})
    assert program._executable.plan_summary()["ref_nodes"] == 0
    assert "Branch" in _steps(program)
    assert np.any(y != 0)


def test_one_program_takes_both_branches_and_two_shapes():
    model = _if_conv_model()
    program = gk.parse_onnx_buffer(model).compile("cpu")
    oracle = gk.parse_onnx_buffer(model).compile("ref")
    for k, (batch, sign) in enumerate([(1, 1.0), (1, -1.0), (2, -1.0), (2, 1.0), (1, 1.0)]):
        x = np.abs(rand((batch, 2, 6, 6), seed=10 + k)) * sign
        np.testing.assert_allclose(
            program.run({"x": x})[0], oracle.run({"x": x})[0], rtol=1e-5, atol=1e-5
        )


def _nested_model() -> bytes:
    """If(a > 0): (If(b > 0): x + 1 else x * 3) else Neg(x), a and b scalar inputs; the inner
    If reads x of the main graph through two levels."""
    inner_then = _branch([node("Add", ["x", "one"], ["it"])], "it", [2, 5], "inner_then")
    inner_else = _branch([node("Mul", ["x", "three"], ["ie"])], "ie", [2, 5], "inner_else")
    outer_then = _branch(
        [
            node("Greater", ["b", "zero"], ["cb"]),
            node("If", ["cb"], ["ot"], then_branch=inner_then, else_branch=inner_else),
        ],
        "ot",
        [2, 5],
        "outer_then",
    )
    outer_else = _branch([node("Neg", ["x"], ["oe"])], "oe", [2, 5], "outer_else")
    nodes = [
        node("Greater", ["a", "zero"], ["ca"]),
        node("If", ["ca"], ["y"], then_branch=outer_then, else_branch=outer_else),
    ]
    return onnx_model(
        nodes,
        {"x": (2, 5), "a": (), "b": ()},
        {"y": (2, 5)},
        {
            "zero": np.array(0, np.float32),
            "one": np.array(1, np.float32),
            "three": np.array(3, np.float32),
        },
    )


@pytest.mark.parametrize("a, b", [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)])
def test_nested_if(a, b):
    x = rand((2, 5), seed=20)
    feeds = {"x": x, "a": np.array(a, np.float32), "b": np.array(b, np.float32)}
    (y,) = check_cpu(_nested_model(), feeds)
    expected = (x + 1 if b > 0 else x * 3) if a > 0 else -x  # numpy oracle too
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_plan_has_branch_and_jump_steps():
    program = gk.parse_onnx_buffer(_nested_model()).compile("cpu")
    feeds = {"x": rand((2, 5), seed=21), "a": np.array(1, np.float32), "b": np.array(1, np.float32)}
    program.run(feeds)
    steps = _steps(program)
    assert steps.count("Branch") == 2 and steps.count("Jump") == 2


def test_branch_outputs_that_are_outer_values_and_graph_outputs():
    # then gives x itself (an outer value, no node in the branch), else a constant
    then_g = _branch([node("Identity", ["x"], ["t"])], "t", [3], "then")
    c = helper.make_tensor("k", TensorProto.FLOAT, [3], [4.0, 5.0, 6.0])
    else_g = _branch([node("Constant", [], ["e"], value=c)], "e", [3], "else")
    model = onnx_model(
        [
            node("ReduceMax", ["x"], ["m"], keepdims=0),
            node("Greater", ["m", "zero"], ["cond"]),
            node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
        ],
        {"x": (3,)},
        {"y": (3,)},
        {"zero": np.array(0, np.float32)},
    )
    x = np.array([0.5, -1.0, 2.0], np.float32)
    (y,) = check_cpu(model, {"x": x})
    np.testing.assert_array_equal(y, x)
    (y,) = check_cpu(model, {"x": -np.abs(x)})
    np.testing.assert_array_equal(y, [4.0, 5.0, 6.0])


def test_branches_of_different_shapes_are_refused_then_run_on_ref():
    then_g = _branch([node("Identity", ["x"], ["t"])], "t", None, "then")
    else_g = _branch([node("Concat", ["x", "x"], ["e"], axis=0)], "e", None, "else")
    model = onnx_model(
        [
            node("ReduceSum", ["x"], ["s"], keepdims=0),
            node("Greater", ["s", "zero"], ["cond"]),
            node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
        ],
        {"x": (2,)},
        {"y": None},
        {"zero": np.array(0, np.float32)},
    )
    with pytest.raises(gk.CompileError, match="If"):
        gk.parse_onnx_buffer(model).compile("cpu").run({"x": rand((2,), seed=22)})
    x = np.abs(rand((2,), seed=23))
    for feed in (x, -x):
        check_cpu(model, {"x": feed}, fallback="ref")


def test_saved_and_loaded_plan_keeps_the_branches():
    model = _if_conv_model()
    program = gk.parse_onnx_buffer(model).compile("cpu")
    x = np.abs(rand((1, 2, 6, 6), seed=30))
    program.run({"x": x})  # the plan for this shape is built and saved with the program
    loaded = gk.load_buffer(gk.save_buffer(program))
    oracle = gk.parse_onnx_buffer(model).compile("ref")
    for feed in (x, -x):
        np.testing.assert_allclose(
            loaded.run({"x": feed})[0], oracle.run({"x": feed})[0], rtol=1e-5, atol=1e-5
        )


def test_if_after_a_ref_segment_reads_its_values():
    # Bernoulli has no cpu kernel (fallback="ref" runs it); the If right after it, compiled
    # in line, reads its result only inside its branches (a capture, not a node input)
    then_g = _branch([node("Mul", ["d", "x"], ["t"])], "t", [3, 3, 3], "then")
    else_g = _branch([node("Add", ["d", "x"], ["e"])], "e", [3, 3, 3], "else")
    model = onnx_model(
        [
            node("Bernoulli", ["x"], ["d"], seed=4.0),
            node("ReduceSum", ["x"], ["s"], keepdims=0),
            node("Greater", ["s", "zero"], ["cond"]),
            node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
        ],
        {"x": (3, 3, 3)},
        {"y": (3, 3, 3)},
        {"zero": np.array(0, np.float32)},
    )
    x = np.abs(rand((3, 3, 3), seed=40)) + 0.1
    for feed in (x, -x):
        check_cpu(model, {"x": feed}, rtol=1e-5, atol=1e-5, fallback="ref")
    program = gk.parse_onnx_buffer(model).compile("cpu", fallback="ref")
    program.run({"x": x})
    assert program._executable.plan_summary()["ref_nodes"] == 1  # Bernoulli only
