# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""fallback='ref': a control-flow node run on ref (If, Loop, Scan) gets the values its
subgraphs read from the main graph, also when a cpu plan computes them (issue #17). Ifs
compile in line and small constant-trip Loops / Scans unroll (targets/native/lower_loops.py),
so those run natively now; a Loop whose body computes its condition still runs on ref."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand


def _info(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _ref_nodes(model: bytes, feeds: dict) -> int:
    """How many nodes the cpu program with fallback='ref' runs on ref."""
    program = gk.parse_onnx_buffer(model).compile("cpu", fallback="ref")
    program.run(feeds)
    return program._executable.plan_summary()["ref_nodes"]


def _if_model(then_nodes, else_nodes, shape) -> bytes:
    """x [1,2,5,5] -> Conv -> Add -> h [1,3,5,5] and Flatten -> f; If(sum(x) > 0) with
    branches that read h / f of the main graph."""
    then_g = helper.make_graph(then_nodes, "then", [], [_info("t", shape)])
    else_g = helper.make_graph(else_nodes, "else", [], [_info("e", shape)])
    nodes = [
        node("Conv", ["x", "w"], ["conv"], pads=[1, 1, 1, 1]),
        node("Add", ["conv", "b"], ["h"]),
        node("Flatten", ["h"], ["f"]),
        node("ReduceSum", ["x"], ["s"], keepdims=0),
        node("Greater", ["s", "zero"], ["c"]),
        node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    return onnx_model(
        nodes,
        {"x": (1, 2, 5, 5)},
        {"y": shape},
        {
            "w": rand((3, 2, 3, 3), seed=1),
            "b": rand((1, 3, 1, 1), seed=2),
            "zero": np.array(0, np.float32),
        },
    )


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["then", "else"])
def test_if_branches_read_a_conv_output(sign):
    model = _if_model([node("Relu", ["h"], ["t"])], [node("Mul", ["h", "h"], ["e"])], (1, 3, 5, 5))
    x = np.abs(rand((1, 2, 5, 5), seed=3)) * sign  # sum(x) > 0 picks then_branch
    (y,) = check_cpu(model, {"x": x}, fallback="ref")
    program = gk.parse_onnx_buffer(model).compile("cpu", fallback="ref")
    # the If is compiled in line now (targets/native/lower_control.py): nothing on ref
    assert program._executable.plan_summary()["ref_nodes"] == 0
    assert np.any(y != 0)


def test_if_branch_reads_a_flattened_value_and_an_initializer():
    # the case of the issue: a [1, N] value made by the cpu plan, read inside a branch
    model = _if_model([node("Sigmoid", ["f"], ["t"])], [node("Identity", ["f"], ["e"])], (1, 75))
    check_cpu(
        model, {"x": np.abs(rand((1, 2, 5, 5), seed=4))}, rtol=1e-6, atol=1e-6, fallback="ref"
    )


def test_if_in_a_dynamic_model_gets_its_captures():
    then_g = helper.make_graph([node("Add", ["m", "m"], ["t"])], "then", [], [_info("t", ["n", 3])])
    else_g = helper.make_graph([node("Neg", ["m"], ["e"])], "else", [], [_info("e", ["n", 3])])
    nodes = [
        node("MatMul", ["x", "w"], ["m"]),
        node("ReduceSum", ["x"], ["s"], keepdims=0),
        node("Greater", ["s", "zero"], ["c"]),
        node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    model = onnx_model(
        nodes,
        {"x": ("n", 4)},
        {"y": ("n", 3)},
        {"w": rand((4, 3), seed=5), "zero": np.array(0, np.float32)},
    )
    program = gk.parse_onnx_buffer(model, default_dim=None).compile("cpu", fallback="ref")
    oracle = gk.parse_onnx_buffer(model, default_dim=None).compile("ref")
    for n, seed in ((2, 6), (5, 7)):
        x = rand((n, 4), seed=seed)
        np.testing.assert_allclose(
            program.run({"x": x})[0], oracle.run({"x": x})[0], rtol=1e-5, atol=1e-6
        )


def test_loop_body_reads_a_matmul_output():
    # y = sum over 3 iterations of (acc * 0.5 + m), m = x @ w computed by the cpu plan
    body = helper.make_graph(
        [
            node("Mul", ["acc", "half"], ["scaled"]),
            node("Add", ["scaled", "m"], ["acc_out"]),
            node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            _info("i", [], TensorProto.INT64),
            _info("cond_in", [], TensorProto.BOOL),
            _info("acc", [2, 3]),
        ],
        [_info("cond_out", [], TensorProto.BOOL), _info("acc_out", [2, 3])],
    )
    nodes = [
        node("MatMul", ["x", "w"], ["mm"]),
        node("Add", ["mm", "bias"], ["m"]),
        node("Loop", ["trips", "", "init"], ["y"], body=body),
    ]
    model = onnx_model(
        nodes,
        {"x": (2, 4)},
        {"y": (2, 3)},
        {
            "w": rand((4, 3), seed=8),
            "bias": rand((3,), seed=9),
            "half": np.array(0.5, np.float32),
            "trips": np.array(3, np.int64),
            "init": rand((2, 3), seed=10),
        },
    )
    (y,) = check_cpu(model, {"x": rand((2, 4), seed=11)}, rtol=1e-6, atol=1e-6, fallback="ref")
    x, w, b = rand((2, 4), seed=11), rand((4, 3), seed=8), rand((3,), seed=9)
    m, acc = x @ w + b, rand((2, 3), seed=10)
    for _ in range(3):
        acc = acc * 0.5 + m
    np.testing.assert_allclose(y, acc, rtol=1e-5, atol=1e-6)  # numpy oracle too
    assert _ref_nodes(model, {"x": x}) == 0  # 3 constant trips: unrolled into the plan


def test_loop_with_a_computed_condition_on_ref_reads_a_matmul_output():
    # while sum(acc) < limit (at most 8 trips): acc = acc + m, m = x @ w from the cpu plan;
    # the body computes its condition (so the Loop is not unrolled) and stacks a scan
    # output of run-time length (so it is not compiled either): it runs on ref
    body = helper.make_graph(
        [
            node("Add", ["acc", "m"], ["acc_out"]),
            node("ReduceSum", ["acc_out"], ["s"], keepdims=0),
            node("Less", ["s", "limit"], ["cond_out"]),
            node("Identity", ["s"], ["s_scan"]),
        ],
        "body",
        [
            _info("i", [], TensorProto.INT64),
            _info("cond_in", [], TensorProto.BOOL),
            _info("acc", [2, 3]),
        ],
        [
            _info("cond_out", [], TensorProto.BOOL),
            _info("acc_out", [2, 3]),
            _info("s_scan", []),
        ],
    )
    nodes = [
        node("MatMul", ["x", "w"], ["m"]),
        node("Loop", ["trips", "go", "init"], ["y", "sums"], body=body),
    ]
    w = np.abs(rand((4, 3), seed=30))
    model = onnx_model(
        nodes,
        {"x": (2, 4)},
        {"y": (2, 3), "sums": None},
        {
            "w": w,
            "limit": np.array(6, np.float32),
            "trips": np.array(8, np.int64),
            "go": np.array(True),
            "init": rand((2, 3), seed=31),
        },
    )
    x = np.abs(rand((2, 4), seed=32))
    y, _ = check_cpu(model, {"x": x}, rtol=1e-6, atol=1e-6, fallback="ref")
    acc, m, trips = rand((2, 3), seed=31), x @ w, 0
    while trips < 8:
        acc, trips = acc + m, trips + 1
        if not acc.sum() < 6:
            break
    assert 1 < trips < 8  # ended by its condition
    np.testing.assert_allclose(y, acc, rtol=1e-5, atol=1e-6)
    assert _ref_nodes(model, {"x": x}) == 1  # the Loop; the MatMul stays in a cpu plan


def test_scan_body_reads_a_main_graph_value():
    body = helper.make_graph(
        [
            node("Mul", ["xi", "m"], ["p"]),
            node("Add", ["st", "p"], ["st_out"]),
            node("Identity", ["p"], ["p_out"]),
        ],
        "body",
        [_info("st", [3]), _info("xi", [3])],
        [_info("st_out", [3]), _info("p_out", [3])],
    )
    nodes = [
        node("Add", ["x0", "x0"], ["m"]),
        node("Scan", ["init", "xs"], ["final", "ps"], body=body, num_scan_inputs=1),
    ]
    model = onnx_model(
        nodes,
        {"x0": (3,), "xs": (4, 3)},
        {"final": (3,), "ps": (4, 3)},
        {"init": rand((3,), seed=12)},
    )
    feeds = {"x0": rand((3,), seed=13), "xs": rand((4, 3), seed=14)}
    check_cpu(model, feeds, rtol=1e-6, atol=1e-6, fallback="ref")
    assert _ref_nodes(model, feeds) == 0  # a static length of 4: unrolled


def test_nested_if_inside_loop_reads_the_main_graph():
    inner_then = helper.make_graph(
        [node("Add", ["acc", "m"], ["t"])], "t", [], [_info("t", [2, 3])]
    )
    inner_else = helper.make_graph(
        [node("Sub", ["acc", "m"], ["e"])], "e", [], [_info("e", [2, 3])]
    )
    body = helper.make_graph(
        [
            node("Identity", ["cond_in"], ["cond_out"]),
            node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
            node("Less", ["i_f", "one"], ["first"]),
            node("If", ["first"], ["acc_out"], then_branch=inner_then, else_branch=inner_else),
        ],
        "body",
        [
            _info("i", [], TensorProto.INT64),
            _info("cond_in", [], TensorProto.BOOL),
            _info("acc", [2, 3]),
        ],
        [_info("cond_out", [], TensorProto.BOOL), _info("acc_out", [2, 3])],
    )
    nodes = [
        node("MatMul", ["x", "w"], ["m"]),
        node("Loop", ["trips", "", "init"], ["y"], body=body),
    ]
    model = onnx_model(
        nodes,
        {"x": (2, 4)},
        {"y": (2, 3)},
        {
            "w": rand((4, 3), seed=15),
            "one": np.array(1, np.float32),
            "trips": np.array(3, np.int64),
            "init": rand((2, 3), seed=16),
        },
    )
    feeds = {"x": rand((2, 4), seed=17)}
    check_cpu(model, feeds, rtol=1e-6, atol=1e-6, fallback="ref")
    assert _ref_nodes(model, feeds) == 0  # unrolled; If(i < 1) constant per iteration


def test_saved_and_loaded_fallback_program_keeps_the_captures():
    model = _if_model([node("Relu", ["h"], ["t"])], [node("Mul", ["h", "h"], ["e"])], (1, 3, 5, 5))
    program = gk.parse_onnx_buffer(model).compile("cpu", fallback="ref")
    loaded = gk.load_buffer(gk.save_buffer(program))
    oracle = gk.parse_onnx_buffer(model).compile("ref")
    for sign, seed in ((1.0, 18), (-1.0, 19)):
        x = np.abs(rand((1, 2, 5, 5), seed=seed)) * sign
        np.testing.assert_allclose(
            loaded.run({"x": x})[0], oracle.run({"x": x})[0], rtol=1e-5, atol=1e-6
        )
