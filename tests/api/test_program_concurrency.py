# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""One compiled cpu program run from many threads at once: every output bit-identical to
the same program's serial output for the same input (the executor's pool of execution
contexts; GRAPHKILN_NUM_THREADS=1 so that runs really overlap on a 2-core machine)."""

from __future__ import annotations

import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import graphkiln
from concurrency_models import bert_feeds, bert_like, resnet_feeds, resnet_like

THREADS, RUNS = 8, 20


@pytest.fixture(autouse=True)
def one_thread_a_run(monkeypatch):
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "1")


def _program(model: onnx.ModelProto, target="cpu", **options):
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
    return prog.compile(target, **options)


def _hammer(prog, feeds_of, threads=THREADS, runs=RUNS) -> dict:
    """Runs prog from `threads` threads at once, `runs` runs each, feed (thread, run) ->
    feeds_of(thread * runs + run); returns {(thread, run): outputs}."""
    results: dict = {}
    errors: list = []
    barrier = threading.Barrier(threads)

    def work(t):
        try:
            barrier.wait()
            for r in range(runs):
                results[t, r] = prog.run(feeds_of(t * runs + r))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    return results


def _check_bit_identical(prog, feeds_of, results: dict, runs=RUNS):
    wrong = []
    for (t, r), outputs in results.items():
        expected = prog.run(feeds_of(t * runs + r))  # serial: one run at a time
        for got, want in zip(outputs, expected):
            if not np.array_equal(got, want):
                wrong.append((t, r, float(np.abs(got - want).max())))
    assert not wrong, (
        f"{len(wrong)} of {len(results)} concurrent runs differ from serial: {wrong[:5]}"
    )


@pytest.mark.parametrize(
    "build, feeds",
    [(resnet_like, resnet_feeds), (bert_like, bert_feeds)],
    ids=["resnet_like", "bert_like"],
)
def test_eight_threads_get_the_serial_outputs(build, feeds):
    prog = _program(build(seed=3, batch=1), max_concurrency=4)
    results = _hammer(prog, lambda i: feeds(i))
    _check_bit_identical(prog, lambda i: feeds(i), results)
    plan = prog.stats()["plan"]
    assert 1 <= plan["contexts"] <= 4, plan
    assert plan["context_bytes"] == plan["contexts"] * plan["arena_bytes"], plan


def test_contexts_are_bounded_by_max_concurrency():
    prog = _program(resnet_like(seed=1, batch=1), max_concurrency=2)
    _hammer(prog, resnet_feeds, threads=6, runs=5)
    assert prog.stats()["plan"]["contexts"] <= 2


def test_two_shapes_of_one_dynamic_model_run_concurrently():
    prog = _program(resnet_like(seed=5, batch="N"), max_concurrency=4)

    def feeds_of(i):
        return resnet_feeds(i, batch=1 + 2 * (i % 2))  # batch 1 and 3 interleaved

    results = _hammer(prog, feeds_of, runs=10)
    _check_bit_identical(prog, feeds_of, results, runs=10)
    assert prog.stats()["plan"]["plans"] == 2


def test_concurrent_first_runs_build_each_plan_once():
    prog = _program(bert_like(seed=2, batch="N"))

    def feeds_of(i):
        return bert_feeds(i, batch=1 + i % 3)

    results = _hammer(prog, feeds_of, runs=3)
    _check_bit_identical(prog, feeds_of, results, runs=3)
    assert prog.stats()["plan"]["plans"] == 3


def _with_unsupported_middle() -> onnx.ModelProto:
    """MatMul (cpu) -> ReverseSequence (ref with fallback) -> Relu (cpu)."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor(
        "w", TensorProto.FLOAT, [8, 8], rng.standard_normal(64).astype(np.float32)
    )
    lens = helper.make_tensor("lens", TensorProto.INT64, [8], [4, 3, 2, 1, 4, 3, 2, 1])
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node(
            "ReverseSequence", ["h", "lens"], ["e"], name="rs", time_axis=0, batch_axis=1
        ),
        helper.make_node("Relu", ["e"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [w, lens],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_fallback_segments_run_concurrently():
    model = _with_unsupported_middle()
    prog = _program(model, fallback="ref")
    ref = _program(model, "ref")

    def feeds_of(i):
        return {"x": np.random.default_rng(i).standard_normal((4, 8)).astype(np.float32)}

    results = _hammer(prog, feeds_of, runs=10)
    _check_bit_identical(prog, feeds_of, results, runs=10)
    for (t, r), (got,) in results.items():
        (want,) = ref.run(feeds_of(t * 10 + r))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_loaded_program_runs_concurrently(tmp_path):
    prog = _program(resnet_like(seed=7, batch=1))
    path = tmp_path / "resnet.gkp"
    graphkiln.save(prog, str(path))
    loaded = graphkiln.load(str(path))
    results = _hammer(loaded, resnet_feeds, runs=5)
    _check_bit_identical(prog, resnet_feeds, results, runs=5)  # the original's serial outputs


def test_programs_compiled_concurrently_match_ref():
    errors, outputs = [], {}

    def work(seed):
        try:
            model = resnet_like(seed=seed, batch=1, widths=(8, 16, 16))
            prog = _program(model)
            ref = _program(model, "ref")
            feeds = resnet_feeds(seed)
            outputs[seed] = (prog.run(feeds)[0], ref.run(feeds)[0])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    for got, want in outputs.values():
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_max_concurrency_is_checked(monkeypatch):
    model = resnet_like(seed=0, batch=1)
    with pytest.raises(ValueError, match="max_concurrency=0: expected a positive integer"):
        _program(model, max_concurrency=0)
    monkeypatch.setenv("GRAPHKILN_MAX_CONCURRENCY", "many")
    with pytest.raises(ValueError, match="GRAPHKILN_MAX_CONCURRENCY='many'"):
        _program(model)
    monkeypatch.setenv("GRAPHKILN_MAX_CONCURRENCY", "3")
    assert _program(model).stats()["plan"]["max_concurrency"] == 3
