# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Small Scan and constant-trip-count Loop nodes unrolled when a plan is made
(passes/unroll_loops.py, targets/native/specialize.py): run natively on cpu (and on the numpy
model of the gpu kernels) against ref; what does not unroll (too many iterations, a
condition computed from data) stays refused, and fallback="ref" still runs it."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.passes.unroll_loops import MAX_TRIPS
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget
from graphkiln.targets.native.lower import LoweringError

from cpu_testing import node, onnx_model, rand

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from gpu_testing import EmulatedPlan  # noqa: E402


def _info(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _compare(model: bytes, feeds: dict, gpu: bool = True, **options):
    """cpu (and the emulated gpu) against ref; the cpu program, for its plan summary."""
    want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    program = gk.parse_onnx_buffer(model).compile("cpu", **options)
    got = program.run(feeds)
    for w, g in zip(want, got):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        assert np.any(w != 0)
    if gpu:
        graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
        emulated = GpuExecutable(graph, plan_factory=EmulatedPlan)
        for w, g in zip(want, emulated.run([feeds[v.name] for v in graph.inputs])):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return program


def _steps(program) -> list[str]:
    plans = program._executable._plans.values()
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


def _native(program) -> None:
    summary = program._executable.plan_summary()
    assert summary["ref_nodes"] == 0 and summary["steps"] > 0


# -- Scan --------------------------------------------------------------------------------


def _scan_model(
    body_nodes, body_in, body_out, inputs, outputs, initializers=None, **attrs
) -> bytes:
    body = helper.make_graph(body_nodes, "body", body_in, body_out)
    names_in, names_out = list(inputs), list(outputs)
    scan = node("Scan", names_in, names_out, body=body, **attrs)
    return onnx_model([scan], inputs, outputs, initializers)


def test_scan_one_input_state_and_outputs():
    # st' = st + x_t * w (w read from the main graph), y_t = tanh(st')
    model = _scan_model(
        [
            node("Mul", ["xt", "w"], ["p"]),
            node("Add", ["st", "p"], ["st_out"]),
            node("Tanh", ["st_out"], ["yt"]),
        ],
        [_info("st", [3]), _info("xt", [3])],
        [_info("st_out", [3]), _info("yt", [3])],
        {"init": (3,), "xs": (5, 3)},
        {"final": (3,), "ys": (5, 3)},
        {"w": rand((3,), seed=1)},
        num_scan_inputs=1,
    )
    feeds = {"init": rand((3,), seed=2), "xs": rand((5, 3), seed=3)}
    _native(_compare(model, feeds))
    acc, ys = feeds["init"], []
    for t in range(5):  # numpy too
        acc = acc + feeds["xs"][t] * rand((3,), seed=1)
        ys.append(np.tanh(acc))
    np.testing.assert_allclose(
        gk.parse_onnx_buffer(model).compile("cpu").run(feeds)[1], np.stack(ys), rtol=1e-5
    )


def test_scan_two_inputs_reverse_directions_and_nonzero_axes():
    # a [2, 4] scanned along axis 1 backwards, b [4, 2] along axis 0; the output stacked
    # along axis 1 in reverse order, the second one along axis -1
    model = _scan_model(
        [
            node("Mul", ["at", "bt"], ["m"]),
            node("Add", ["st", "m"], ["st_out"]),
            node("Sub", ["m", "st"], ["o1"]),
            node("Neg", ["at"], ["o2"]),
        ],
        [_info("st", [2]), _info("at", [2]), _info("bt", [2])],
        [_info("st_out", [2]), _info("o1", [2]), _info("o2", [2])],
        {"init": (2,), "a": (2, 4), "b": (4, 2)},
        {"final": (2,), "y1": (2, 4), "y2": (2, 4)},
        num_scan_inputs=2,
        scan_input_axes=[1, 0],
        scan_input_directions=[1, 0],
        scan_output_axes=[1, -1],
        scan_output_directions=[1, 0],
    )
    feeds = {"init": rand((2,), seed=4), "a": rand((2, 4), seed=5), "b": rand((4, 2), seed=6)}
    _native(_compare(model, feeds))


def test_scan_state_only():
    model = _scan_model(
        [node("Mul", ["st", "xt"], ["st_out"])],
        [_info("st", [2, 3]), _info("xt", [2, 3])],
        [_info("st_out", [2, 3])],
        {"init": (2, 3), "xs": (2, 6, 3)},
        {"final": (2, 3)},
        num_scan_inputs=1,
        scan_input_axes=[-2],
    )
    feeds = {"init": rand((2, 3), seed=7), "xs": rand((2, 6, 3), seed=8, low=0.5, high=1.5)}
    _native(_compare(model, feeds))


# -- Loop --------------------------------------------------------------------------------


def _loop_body(nodes, carried: dict, scans: dict = None, cond="cond_in") -> object:
    """Body (i, cond_in, carried...) -> (cond, carried_out..., scans...)."""
    scans = scans or {}
    return helper.make_graph(
        nodes,
        "body",
        [_info("i", [], TensorProto.INT64), _info("cond_in", [], TensorProto.BOOL)]
        + [_info(k, v) for k, v in carried.items()],
        [_info(cond, [], TensorProto.BOOL)]
        + [_info(k + "_out", v) for k, v in carried.items()]
        + [_info(k, v) for k, v in scans.items()],
    )


def _counting_body():
    """acc' = acc * 0.5 + m * i (m from the main graph), n' = n + 1, scan output acc'."""
    return [
        node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
        node("Mul", ["m", "i_f"], ["mi"]),
        node("Mul", ["acc", "half"], ["scaled"]),
        node("Add", ["scaled", "mi"], ["acc_out"]),
        node("Add", ["n", "one"], ["n_out"]),
        node("Identity", ["acc_out"], ["trace"]),
        node("Identity", ["cond_in"], ["cond_out"]),
    ]


def _loop_model(trips: int, scan: bool, batch=2, cond_input: str = "") -> bytes:
    body = _loop_body(
        _counting_body(),
        {"acc": [batch, 3], "n": [1]},
        {"trace": [batch, 3]} if scan else {},
        cond="cond_out",
    )
    outs = ["y", "count"] + (["ys"] if scan else [])
    nodes = [
        node("MatMul", ["x", "w"], ["m"]),
        node("Add", ["x0", "x0"], ["init"]),
        node("Loop", ["trips", cond_input, "init", "n0"], outs, body=body),
    ]
    out_shapes = {"y": (batch, 3), "count": (1,)}
    if scan:
        out_shapes["ys"] = (trips, batch, 3)
    initializers = {
        "w": rand((4, 3), seed=9),
        "half": np.array(0.5, np.float32),
        "one": np.array([1.0], np.float32),
        "trips": np.array(trips, np.int64),
        "n0": np.array([2.0], np.float32),
    }
    if cond_input:
        initializers[cond_input] = np.array(True)
    return onnx_model(nodes, {"x": (batch, 4), "x0": (batch, 3)}, out_shapes, initializers)


@pytest.mark.parametrize("scan", [False, True], ids=["carried", "scan_outputs"])
def test_loop_constant_trips(scan):
    model = _loop_model(4, scan)
    feeds = {"x": rand((2, 4), seed=10), "x0": rand((2, 3), seed=11)}
    _native(_compare(model, feeds))


def test_loop_with_a_constant_true_condition_input():
    model = _loop_model(3, True, cond_input="go")
    _native(_compare(model, {"x": rand((2, 4), seed=12), "x0": rand((2, 3), seed=13)}))


def test_loop_with_symbolic_batch_compiled_once_runs_two_sizes():
    body = _loop_body(_counting_body(), {"acc": ["N", 3], "n": [1]}, cond="cond_out")
    nodes = [
        node("MatMul", ["x", "w"], ["m"]),
        node("Loop", ["trips", "", "x0", "n0"], ["y", "count"], body=body),
    ]
    model = onnx_model(
        nodes,
        {"x": ("N", 4), "x0": ("N", 3)},
        {"y": ("N", 3), "count": (1,)},
        {
            "w": rand((4, 3), seed=14),
            "half": np.array(0.5, np.float32),
            "one": np.array([1.0], np.float32),
            "trips": np.array(5, np.int64),
            "n0": np.array([0.0], np.float32),
        },
    )
    program = gk.parse_onnx_buffer(model, default_dim=None).compile("cpu")  # no fallback
    oracle = gk.parse_onnx_buffer(model, default_dim=None).compile("ref")
    for n, seed in ((2, 15), (5, 16)):
        feeds = {"x": rand((n, 4), seed=seed), "x0": rand((n, 3), seed=seed + 10)}
        for g, w in zip(program.run(feeds), oracle.run(feeds)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        assert program.run(feeds)[0].shape == (n, 3)
    summary = program._executable.plan_summary()
    assert summary["plans"] == 2 and summary["ref_nodes"] == 0


def _if_body(branch_cond_nodes):
    then_g = helper.make_graph([node("Add", ["acc", "m"], ["t"])], "t", [], [_info("t", [2, 3])])
    else_g = helper.make_graph([node("Sub", ["acc", "m"], ["e"])], "e", [], [_info("e", [2, 3])])
    return _loop_body(
        [
            node("Identity", ["cond_in"], ["cond_out"]),
            *branch_cond_nodes,
            node("If", ["pick"], ["acc_out"], then_branch=then_g, else_branch=else_g),
        ],
        {"acc": [2, 3]},
        cond="cond_out",
    )


def _if_loop_model(body) -> bytes:
    nodes = [
        node("MatMul", ["x", "w"], ["m"]),
        node("Loop", ["trips", "", "init"], ["y"], body=body),
    ]
    return onnx_model(
        nodes,
        {"x": (2, 4), "init": (2, 3)},
        {"y": (2, 3)},
        {
            "w": rand((4, 3), seed=17),
            "trips": np.array(4, np.int64),
            "zero": np.array(0, np.float32),
            "two": np.array(2, np.int64),
        },
    )


def test_loop_body_with_a_data_dependent_if_runs_natively_on_cpu_and_gpu():
    # the If reads the carried value: compiled in line on cpu and gpu (lower_control.py)
    body = _if_body(
        [node("ReduceSum", ["acc"], ["s"], keepdims=0), node("Less", ["s", "zero"], ["pick"])]
    )
    model = _if_loop_model(body)
    for seed in (18, 19):
        feeds = {"x": rand((2, 4), seed=seed), "init": rand((2, 3), seed=seed + 5)}
        program = _compare(model, feeds)  # the emulated gpu too (src/gpu/control.hip)
        _native(program)
        assert _steps(program).count("Branch") == 4  # one If per iteration
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    emulated = GpuExecutable(graph, plan_factory=EmulatedPlan)
    emulated.run([feeds[v.name] for v in graph.inputs])
    gpu_steps = [s.kernel for p in emulated._plans.values() for s in p.plan.steps]
    assert gpu_steps.count("Branch") == 4


def test_loop_body_with_an_if_on_the_iteration_number_is_spliced():
    # If(i < 2): constant per iteration once unrolled, so no Branch and the gpu runs it too
    body = _if_body([node("Less", ["i", "two"], ["pick"])])
    model = _if_loop_model(body)
    feeds = {"x": rand((2, 4), seed=20), "init": rand((2, 3), seed=21)}
    program = _compare(model, feeds)
    _native(program)
    assert "Branch" not in _steps(program)


def test_loop_above_the_bound_is_compiled_not_unrolled():
    # too long to unroll, no scan outputs: cpu compiles it in line (lower_control.py)
    model = _loop_model(MAX_TRIPS + 1, False)
    feeds = {"x": rand((2, 4), seed=22), "x0": rand((2, 3), seed=23)}
    program = _compare(model, feeds, gpu=False)
    _native(program)


def test_loop_with_scan_outputs_above_the_bound_stays_refused():
    model = _loop_model(MAX_TRIPS + 1, True)
    with pytest.raises(LoweringError, match=r"Loop.*not unrolled: 257 iterations"):
        gk.parse_onnx_buffer(model).compile("cpu")
    feeds = {"x": rand((2, 4), seed=22), "x0": rand((2, 3), seed=23)}
    program = _compare(model, feeds, gpu=False, fallback="ref")
    assert program._executable.plan_summary()["ref_nodes"] == 1  # the Loop, on ref


def _while_model(cond_input: str) -> bytes:
    """acc = acc + 1 while sum(acc) < 3 (at most 10 trips): the body computes its condition,
    which ONNX reads only where the Loop has a cond input."""
    body = _loop_body(
        [
            node("Add", ["acc", "one"], ["acc_out"]),
            node("ReduceSum", ["acc_out"], ["s"], keepdims=0),
            node("Less", ["s", "three"], ["cond_out"]),
        ],
        {"acc": [2, 3]},
        cond="cond_out",
    )
    nodes = [node("Loop", ["trips", cond_input, "x"], ["y"], body=body)]
    initializers = {
        "trips": np.array(10, np.int64),
        "one": np.array(1, np.float32),
        "three": np.array(3, np.float32),
    }
    if cond_input:
        initializers[cond_input] = np.array(True)
    return onnx_model(nodes, {"x": (2, 3)}, {"y": (2, 3)}, initializers)


def test_loop_with_a_data_dependent_condition_is_compiled_not_unrolled():
    # not unrollable (the body's condition depends on data): compiled in line on cpu
    # (lower_control.py lower_loop, tests/targets/cpu/test_cpu_loop_compiled.py)
    model = _while_model("go")
    feeds = {"x": rand((2, 3), seed=24)}
    program = _compare(model, feeds, gpu=False)
    _native(program)
    np.testing.assert_allclose(program.run(feeds)[0], feeds["x"] + 1)  # sum(x + 1) >= 3


def test_loop_without_a_cond_input_ignores_the_body_condition():
    model = _while_model("")  # a for loop of 10 trips: unrolled
    feeds = {"x": rand((2, 3), seed=24)}
    program = _compare(model, feeds)
    _native(program)
    np.testing.assert_allclose(program.run(feeds)[0], feeds["x"] + 10, rtol=1e-6)


def test_saved_and_loaded_unrolled_program():
    model = _loop_model(3, True)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    loaded = gk.load_buffer(gk.save_buffer(program))
    feeds = {"x": rand((2, 4), seed=25), "x0": rand((2, 3), seed=26)}
    for g, w in zip(loaded.run(feeds), program.run(feeds)):
        np.testing.assert_array_equal(g, w)
