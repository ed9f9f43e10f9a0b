# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Plans made by a run finish building behind their first run (issue 20's new-shape cost):
when the core budget has a core beyond what a run holds, the executor builds the light
steps and the first heavy one at once and a worker builds the other oneDNN kernels while
the first run goes on. Checked: results against ref and bit for bit against plans built at
once, build errors surfacing in the run that reaches the step, later contexts and
concurrent runs, packings still shared between plans, and an executor dropped mid-build."""

from __future__ import annotations

import copy
import gc
import threading

import numpy as np
import pytest

import graphkiln as gk
from concurrency_models import ocr_recognizer
from graphkiln._native import load_core
from graphkiln.targets.cpu.core_executor import build_executor
from graphkiln.targets.cpu.threads import physical_cores

OCR = ocr_recognizer(seed=0).SerializeToString()
WIDTHS = (160, 184, 232)


def ocr_feeds(seed: int, width: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((1, 3, 48, width)).astype(np.float32)}


def program(target: str = "cpu", **options):
    return gk.parse_onnx_buffer(OCR, default_dim=None).compile(target, **options)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


def executors(prog) -> list:
    return [s.executor for segs in prog._executable._plans.values() for s in segs]


@pytest.fixture
def core_budget():
    """Sets the process-wide core budget (restored after the test)."""
    program().run(ocr_feeds(0, WIDTHS[0]))  # the first build sets it: set it after
    core = load_core()
    yield core.set_core_budget
    core.set_core_budget(physical_cores())


@pytest.mark.parametrize("threads", ["1", "2"])
def test_plans_built_behind_match_ref_and_plans_built_at_once(core_budget, monkeypatch, threads):
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", threads)
    core_budget(4)  # a core beyond a run's: plans made by runs are built behind
    ref, prog = program("ref"), program()
    got = {}
    for w in WIDTHS:
        feeds = ocr_feeds(w, w)
        got[w] = prog.run(feeds)[0]
        close(got[w], ref.run(feeds)[0])
        np.testing.assert_array_equal(prog.run(feeds)[0], got[w])  # the plan's second run
    assert len(executors(prog)) == len(WIDTHS)
    assert all(e.built_behind for e in executors(prog))
    # compile(shapes=...) builds ahead, at once: the same kernels, bit for bit
    ahead = program(shapes=[{"x": (1, 3, 48, w)} for w in WIDTHS])
    assert not any(e.built_behind for e in executors(ahead))
    for w in WIDTHS:
        np.testing.assert_array_equal(ahead.run(ocr_feeds(w, w))[0], got[w])


def test_without_a_spare_core_the_plan_is_built_at_once(core_budget, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "1")
    core_budget(1)  # all a run needs: nothing to build behind with
    ref, prog = program("ref"), program()
    feeds = ocr_feeds(3, WIDTHS[1])
    close(prog.run(feeds)[0], ref.run(feeds)[0])
    assert not any(e.built_behind for e in executors(prog))


def test_packings_are_shared_between_plans_built_behind(core_budget, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "1")
    core_budget(4)
    prog = program()
    for w in WIDTHS:
        prog.run(ocr_feeds(w, w))
    first, *later = executors(prog)
    packed = sum(len(items) for _, items in first.packed_constants())
    assert packed >= 4
    assert all(e.reused_packings == packed for e in later)
    assert prog._executable.packing.packed_bytes() > 0


def _plan_parts(width: int):
    """An ocr plan's executor arguments (steps as the core takes them) and a feed."""
    prog = program()
    feeds = ocr_feeds(1, width)
    prog.run(feeds)
    (segment,) = next(iter(prog._executable._plans.values()))
    plan = segment.plan

    def specs(slots):
        return [(plan.slots[s].dtype.numpy, list(plan.slots[s].dims)) for s in slots]

    parts = (
        plan.executor_steps(),
        plan.constants,
        plan.arena_bytes,
        specs(plan.input_slots),
        specs(plan.output_slots),
    )
    return parts, [feeds["x"]]


def test_a_build_error_behind_surfaces_in_the_run_that_reaches_the_step(core_budget):
    (steps, constants, arena, ins, outs), arrays = _plan_parts(WIDTHS[1])
    heavy = [i for i, s in enumerate(steps) if s["kernel"] in ("Conv", "MatMul", "Pool")]
    assert len(heavy) >= 3
    core_budget(4)
    bad = copy.deepcopy(steps)
    last_conv = max(i for i in heavy if steps[i]["kernel"] == "Conv")
    bad[last_conv]["attrs"] = dict(bad[last_conv]["attrs"], strides=[1])  # wrong rank
    executor = build_executor(bad, constants, arena, ins, outs, 1, 1, build_behind=True)
    assert executor.built_behind  # the error is not the constructor's
    for _ in range(2):  # every run that reaches the step says so
        with pytest.raises(ValueError, match="window attributes") as info:
            executor.run(arrays)
        assert f"Conv '{steps[last_conv]['name']}'" in str(info.value)
    executor.wait_built()
    assert executor.packed_constants()  # the other kernels' packings are there
    # the first heavy step is built by the constructor: its error is the constructor's
    bad = copy.deepcopy(steps)
    bad[heavy[0]]["attrs"] = dict(bad[heavy[0]]["attrs"], strides=[1])
    with pytest.raises(ValueError, match="window attributes"):
        build_executor(bad, constants, arena, ins, outs, 1, 1, build_behind=True)
    # the budget is whole again: a plan built at once (no spare core needed) still runs
    core_budget(1)
    good = build_executor(steps, constants, arena, ins, outs, 1, 1, build_behind=True)
    assert not good.built_behind
    good.run(arrays)


def test_concurrent_first_runs_of_a_plan_built_behind(core_budget):
    (steps, constants, arena, ins, outs), _ = _plan_parts(WIDTHS[2])
    core_budget(1)
    serial = build_executor(steps, constants, arena, ins, outs, 1, 1)
    feeds = [[ocr_feeds(10 + k, WIDTHS[2])["x"]] for k in range(6)]
    want = [serial.run(f)[0] for f in feeds]
    core_budget(4)
    # three contexts: runs past the first take contexts built once the first is complete
    executor = build_executor(steps, constants, arena, ins, outs, 1, 3, build_behind=True)
    assert executor.built_behind
    got: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def call(k: int) -> None:
        try:
            got[k] = executor.run(feeds[k])[0]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=call, args=(k,)) for k in range(len(feeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[k], w)
    assert 1 <= executor.contexts_created <= 3


def test_an_executor_dropped_while_building_behind_goes_quietly(core_budget):
    (steps, constants, arena, ins, outs), arrays = _plan_parts(WIDTHS[0])
    core_budget(4)
    for _ in range(3):
        executor = build_executor(steps, constants, arena, ins, outs, 1, 1, build_behind=True)
        del executor  # its worker is stopped and joined
        gc.collect()
    core_budget(2)  # only whole if every worker gave its core back: a spare core for this
    executor = build_executor(steps, constants, arena, ins, outs, 1, 1, build_behind=True)
    assert executor.built_behind
    close(executor.run(arrays)[0], program("ref").run({"x": arrays[0]})[0])
