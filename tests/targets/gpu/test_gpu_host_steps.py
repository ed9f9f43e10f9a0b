# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Control flow and host steps on the gpu target: an If or a Loop compiled in line with the
gpu's control steps (src/gpu/control.hip: the predicate / trip test read back once per If or
iteration), and ops the gpu has no kernel for (LSTM, GRU, GridSample, DFT, ...) run as host
steps through the cpu kernels (targets/gpu/host_steps.py, src/gpu/host_step.hip). Each model
runs on the numpy model of the gpu kernels here (host steps there call the cpu core) and,
marked gpu, on the device, against ref; on the device a plan holding either is not replayed
as a graph and says why, and concurrent runs stay correct."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk
from graphkiln.targets.gpu import table
from graphkiln.targets.gpu.host_steps import host_ops
from gpu_testing import compare, requires_gpu, run_emulated

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, initializers=(), opset=17) -> bytes:
    graph = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


def _tensor(name, array):
    return helper.make_tensor(name, F, array.shape, array.astype(np.float32).ravel())


def lstm_then_relu(rng):
    """LSTM (bidirectional, hidden 8) over 5 steps, then a gpu Relu of its output."""
    seq, batch, inp, hidden = 5, 2, 6, 8
    w = rng.standard_normal((2, 4 * hidden, inp)) * 0.3
    r = rng.standard_normal((2, 4 * hidden, hidden)) * 0.3
    b = rng.standard_normal((2, 8 * hidden)) * 0.1
    nodes = [
        helper.make_node(
            "LSTM",
            ["x", "W", "R", "B"],
            ["y", "y_h", ""],
            hidden_size=hidden,
            direction="bidirectional",
        ),
        helper.make_node("Relu", ["y"], ["out"]),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", F, [seq, batch, inp])],
        [
            helper.make_tensor_value_info("out", F, [seq, 2, batch, hidden]),
            helper.make_tensor_value_info("y_h", F, [2, batch, hidden]),
        ],
        [_tensor("W", w), _tensor("R", r), _tensor("B", b)],
    )
    return model, {"x": rng.standard_normal((seq, batch, inp)).astype(np.float32)}


def if_on_energy(rng, loud: bool):
    """If mean(x^2) > 1: x * 2 + 1, else tanh(x) - 0.5 (the condition computed on the gpu)."""
    then_graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "two"], ["t1"]),
            helper.make_node("Add", ["t1", "one"], ["then_out"]),
        ],
        "then",
        [],
        [helper.make_tensor_value_info("then_out", F, [3, 4])],
    )
    else_graph = helper.make_graph(
        [
            helper.make_node("Tanh", ["x"], ["e1"]),
            helper.make_node("Sub", ["e1", "half"], ["else_out"]),
        ],
        "else",
        [],
        [helper.make_tensor_value_info("else_out", F, [3, 4])],
    )
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["energy"], keepdims=0),
        helper.make_node("Greater", ["energy", "one"], ["cond"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=then_graph, else_branch=else_graph),
    ]
    consts = [_tensor(n, np.array(v)) for n, v in (("two", 2.0), ("one", 1.0), ("half", 0.5))]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", F, [3, 4])],
        [helper.make_tensor_value_info("y", F, [3, 4])],
        consts,
    )
    scale = 3.0 if loud else 0.2
    return model, {"x": (rng.standard_normal((3, 4)) * scale).astype(np.float32)}


def loop_with_run_time_count(rng):
    """A Loop whose trip count is a graph input: state s <- s * 0.9 + x, while i < n."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Mul", ["s_in", "decay"], ["s1"]),
            helper.make_node("Add", ["s1", "x"], ["s_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("s_in", F, [2, 3]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("s_out", F, [2, 3]),
        ],
    )
    nodes = [helper.make_node("Loop", ["n", "", "s0"], ["s"], body=body)]
    model = _model(
        nodes,
        [
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_tensor_value_info("s0", F, [2, 3]),
            helper.make_tensor_value_info("x", F, [2, 3]),
        ],
        [helper.make_tensor_value_info("s", F, [2, 3])],
        [_tensor("decay", np.array(0.9))],
    )
    feeds = {
        "n": np.array(7, np.int64),
        "s0": rng.standard_normal((2, 3)).astype(np.float32),
        "x": rng.standard_normal((2, 3)).astype(np.float32),
    }
    return model, feeds


def grid_sample_after_conv(rng):
    """A gpu Conv, then GridSample (bilinear, a host step), then a gpu Sigmoid."""
    w = rng.standard_normal((4, 3, 3, 3)) * 0.3
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("GridSample", ["c", "grid"], ["g"], align_corners=0),
        helper.make_node("Sigmoid", ["g"], ["y"]),
    ]
    model = _model(
        nodes,
        [
            helper.make_tensor_value_info("x", F, [1, 3, 8, 8]),
            helper.make_tensor_value_info("grid", F, [1, 5, 6, 2]),
        ],
        [helper.make_tensor_value_info("y", F, [1, 4, 5, 6])],
        [_tensor("w", w)],
        opset=20,
    )
    feeds = {
        "x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32),
        "grid": rng.uniform(-1.1, 1.1, (1, 5, 6, 2)).astype(np.float32),
    }
    return model, feeds


CASES = {
    "lstm_then_relu": lstm_then_relu,
    "if_loud": lambda rng: if_on_energy(rng, True),
    "if_quiet": lambda rng: if_on_energy(rng, False),
    "loop_run_time_count": loop_with_run_time_count,
    "grid_sample_after_conv": grid_sample_after_conv,
}


def _ref(model, feeds):
    return gk.parse_onnx_buffer(model).compile("ref").run(feeds)


def test_host_ops_are_the_cpu_only_lowerings():
    ops = host_ops(table.LOWERINGS)
    for op in ("LSTM", "GRU", "RNN", "GridSample", "RoiAlign", "DFT", "ConvTranspose"):
        assert op in ops
    # what the gpu has kernels for never runs on the host
    for op in ("Conv", "MatMul", "Relu", "Softmax", "If", "Loop"):
        assert op not in ops


@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_gpu_matches_ref(name):
    model, feeds = CASES[name](np.random.default_rng(7))
    compare(run_emulated(model, feeds), _ref(model, feeds), rtol=1e-4, atol=1e-5)


def test_emulated_loop_runs_the_fed_number_of_iterations():
    model, feeds = loop_with_run_time_count(np.random.default_rng(3))
    for n in (0, 1, 4):
        run = {**feeds, "n": np.array(n, np.int64)}
        compare(run_emulated(model, run), _ref(model, run), rtol=1e-5, atol=1e-6)


@requires_gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_device_matches_ref_and_is_not_replayed(name):
    model, feeds = CASES[name](np.random.default_rng(11))
    program = gk.parse_onnx_buffer(model).compile("gpu")
    want = _ref(model, feeds)
    for _ in range(3):  # a replayable plan would be captured by now
        compare(program.run(feeds), want, rtol=1e-4, atol=1e-5)
    summary = program._executable.plan_summary()
    assert summary["graph"].startswith("off: "), summary["graph"]
    if name in ("lstm_then_relu", "grid_sample_after_conv"):
        assert summary["host_steps"] >= 1
        assert "on the host" in summary["graph"]
    else:
        assert summary["host_steps"] == 0
        assert "control flow" in summary["graph"]


@requires_gpu
def test_device_if_takes_each_branch():
    loud, loud_feeds = if_on_energy(np.random.default_rng(1), True)
    _, quiet_feeds = if_on_energy(np.random.default_rng(2), False)
    program = gk.parse_onnx_buffer(loud).compile("gpu")
    for feeds in (loud_feeds, quiet_feeds, loud_feeds):
        compare(program.run(feeds), _ref(loud, feeds), rtol=1e-5, atol=1e-6)


def _concurrent_runs(make) -> None:
    model, feeds = make(np.random.default_rng(5))
    program = gk.parse_onnx_buffer(model).compile("gpu", max_concurrency=4)
    rng = np.random.default_rng(9)
    runs = []
    for k in range(8):
        run = dict(feeds)
        for name, value in feeds.items():
            if value.dtype == np.float32:
                run[name] = rng.standard_normal(value.shape).astype(np.float32)
        if "n" in run:
            run["n"] = np.array(k, np.int64)
        runs.append(run)
    want = [_ref(model, r) for r in runs]
    got: list = [None] * len(runs)
    errors: list = []

    def work(k):
        try:
            for _ in range(3):
                got[k] = program.run(runs[k])
        except Exception as exc:  # noqa: BLE001 - every failure is reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for g, w in zip(got, want):
        compare(g, w, rtol=1e-4, atol=1e-5)


@requires_gpu
@pytest.mark.parametrize("make", [lstm_then_relu, loop_with_run_time_count])
def test_device_concurrent_runs_with_host_steps_and_loops(make):
    """Threads running one program at once each get their own results."""
    _concurrent_runs(make)
