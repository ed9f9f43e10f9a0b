# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A Loop whose trip count or condition is known only at run time, compiled in line on cpu
(targets/native/lower_control.py lower_loop; src/cpu/control.cpp LoopTest / LoopNext): the
C++ executor tests the condition and jumps back; the carried state lives in the arena."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand


def _info(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _kernels(program) -> list[str]:
    plans = list(program._executable._plans.values())
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


def _until_model() -> bytes:
    """acc = acc * 0.5 + m (m = x @ w) while sum(acc) < limit, at most M times; also counts
    the iterations (an i64 carried value) and passes x on (a carried value unchanged)."""
    body = helper.make_graph(
        [
            node("Mul", ["acc", "half"], ["scaled"]),
            node("Add", ["scaled", "m"], ["acc_out"]),
            node("Add", ["count", "one"], ["count_out"]),
            node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
            node("Less", ["total", "limit"], ["cond_out"]),
            node("Identity", ["keep"], ["keep_out"]),
        ],
        "body",
        [
            _info("i", [], TensorProto.INT64),
            _info("cond_in", [], TensorProto.BOOL),
            _info("acc", [2, 3]),
            _info("count", [], TensorProto.INT64),
            _info("keep", [2, 4]),
        ],
        [
            _info("cond_out", [], TensorProto.BOOL),
            _info("acc_out", [2, 3]),
            _info("count_out", [], TensorProto.INT64),
            _info("keep_out", [2, 4]),
        ],
    )
    return onnx_model(
        [
            node("MatMul", ["x", "w"], ["m"]),
            node("Loop", ["trips", "go", "init", "zero", "x"], ["y", "n", "x_out"], body=body),
        ],
        {"x": (2, 4), "trips": (), "limit": ()},
        {"y": (2, 3), "n": (), "x_out": (2, 4)},
        {
            "w": np.abs(rand((4, 3), seed=1)),
            "half": np.array(0.5, np.float32),
            "one": np.array(1, np.int64),
            "zero": np.array(0, np.int64),
            "go": np.array(True),
            "init": rand((2, 3), seed=2),
        },
        dtypes={"trips": np.int64, "n": np.int64},
    )


def _numpy(x, trips, limit):
    w, acc, count = np.abs(rand((4, 3), seed=1)), rand((2, 3), seed=2), 0
    m = x @ w
    for _ in range(trips):
        acc = acc * 0.5 + m
        count += 1
        if not acc.sum() < limit:
            break
    return acc, count


@pytest.mark.parametrize("trips, limit", [(0, 100.0), (1, 100.0), (7, 100.0), (50, 6.0)])
def test_loop_with_run_time_trip_count_and_condition(trips, limit):
    x = np.abs(rand((2, 4), seed=3))
    feeds = {"x": x, "trips": np.array(trips, np.int64), "limit": np.array(limit, np.float32)}
    y, n, x_out = check_cpu(_until_model(), feeds)
    acc, count = _numpy(x, trips, limit)
    np.testing.assert_allclose(y, acc, rtol=1e-5)
    assert int(n) == count and (limit > 50 or 0 < count < trips)
    np.testing.assert_array_equal(x_out, x)


def test_one_compiled_loop_serves_every_trip_count():
    program = gk.parse_onnx_buffer(_until_model()).compile("cpu")
    x = np.abs(rand((2, 4), seed=4))
    for trips in (3, 0, 9, 2):
        feeds = {"x": x, "trips": np.array(trips, np.int64), "limit": np.array(1e9, np.float32)}
        y, n, _ = program.run(feeds)
        assert int(n) == trips
        np.testing.assert_allclose(y, _numpy(x, trips, 1e9)[0], rtol=1e-5)
    kernels = _kernels(program)
    assert kernels.count("LoopTest") == 1 and kernels.count("LoopNext") == 1
    assert program._executable.plan_summary()["ref_nodes"] == 0


def test_swapped_carried_values_go_through_temporaries():
    # (a, b, t) -> (b, a, t + a): two results are views of each other's state
    body = helper.make_graph(
        [
            node("Identity", ["c"], ["c_out"]),
            node("Identity", ["b"], ["a_out"]),
            node("Identity", ["a"], ["b_out"]),
            node("Add", ["t", "a"], ["t_out"]),
        ],
        "body",
        [
            _info("i", [], TensorProto.INT64),
            _info("c", [], TensorProto.BOOL),
            _info("a", [3]),
            _info("b", [3]),
            _info("t", [3]),
        ],
        [
            _info("c_out", [], TensorProto.BOOL),
            _info("a_out", [3]),
            _info("b_out", [3]),
            _info("t_out", [3]),
        ],
    )
    model = onnx_model(
        [
            node(
                "Loop",
                ["trips", "", "a0", "b0", "t0"],
                ["a_final", "b_final", "t_final"],
                body=body,
            )
        ],
        {"trips": (), "a0": (3,), "b0": (3,), "t0": (3,)},
        {"a_final": (3,), "b_final": (3,), "t_final": (3,)},
        dtypes={"trips": np.int64},
    )
    a, b, t = rand((3,), seed=5), rand((3,), seed=6), rand((3,), seed=8)
    feeds = {"trips": np.array(5, np.int64), "a0": a, "b0": b, "t0": t}
    got = check_cpu(model, feeds)
    for _ in range(5):
        a, b, t = b, a, t + a
    for g, want in zip(got, (a, b, t)):
        np.testing.assert_allclose(g, want, rtol=1e-6)


def test_loop_with_scan_outputs_and_a_run_time_count_stays_on_ref():
    body = helper.make_graph(
        [
            node("Identity", ["c"], ["c_out"]),
            node("Add", ["a", "a"], ["a_out"]),
            node("Identity", ["a_out"], ["scan"]),
        ],
        "body",
        [_info("i", [], TensorProto.INT64), _info("c", [], TensorProto.BOOL), _info("a", [2])],
        [_info("c_out", [], TensorProto.BOOL), _info("a_out", [2]), _info("scan", [2])],
    )
    model = onnx_model(
        [node("Loop", ["trips", "", "a0"], ["a_final", "scans"], body=body)],
        {"trips": (), "a0": (2,)},
        {"a_final": (2,), "scans": None},
        dtypes={"trips": np.int64},
    )
    feeds = {"trips": np.array(3, np.int64), "a0": rand((2,), seed=7)}
    check_cpu(model, feeds, fallback="ref")
