# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu executable's plan cache under threads (plan_cache.py), and the max_concurrency
option, without a device: plans are the numpy model of the kernels (plan_emulator.py)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import graphkiln as gk
from concurrency_models import resnet_feeds, resnet_like
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.plan_cache import PlanCache
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget
from gpu_testing import EmulatedPlan
from plan_emulator import Emulator


def _together(n: int, work) -> list:
    """work(i) on n threads started at once; their results in order (errors re-raised)."""
    results, errors = [None] * n, []
    barrier = threading.Barrier(n)

    def run(i):
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def test_a_missing_plan_is_built_once_for_threads_asking_together():
    cache, builds = PlanCache(limit=4), []

    def build():
        builds.append(1)
        time.sleep(0.05)  # the others ask meanwhile
        return object()

    plans = _together(8, lambda i: cache.get("k", build))
    assert len(builds) == 1
    assert all(p is plans[0] for p in plans)


def test_a_failed_build_fails_every_waiter_and_is_tried_again_later():
    cache, calls = PlanCache(limit=4), []

    def failing():
        calls.append(1)
        time.sleep(0.05)
        raise RuntimeError("no memory")

    with pytest.raises(RuntimeError, match="no memory"):
        _together(4, lambda i: cache.get("k", failing))
    assert len(calls) == 1 and len(cache) == 0
    assert cache.get("k", lambda: "plan") == "plan"  # nothing stale was kept


def test_eviction_drops_least_recently_used_and_spares_holders():
    cache = PlanCache(limit=2)
    held = cache.get("a", lambda: ["plan a"])
    cache.get("b", lambda: ["plan b"])
    cache.get("a", lambda: pytest.fail("a is cached"))  # a is now the most recent
    cache.get("c", lambda: ["plan c"])  # evicts b
    assert cache.values() == [["plan a"], ["plan c"]]
    cache.get("d", lambda: ["plan d"])  # evicts a, which a run may still hold
    assert held == ["plan a"] and len(cache) == 2


class _EmulatorPerRun:
    """The numpy kernel model keeps a run's buffers on itself: a fresh one per run (as a
    device executor takes an execution context per run)."""

    def __init__(self, plan):
        self.plan = plan

    def run(self, inputs):
        return Emulator(self.plan).run(inputs)


def _emulated(model, factory_calls: list) -> GpuExecutable:
    program = gk.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)

    def factory(g, builtin_blas):
        factory_calls.append(tuple(v.type.dims for v in g.inputs))
        time.sleep(0.05)  # a slow build: the other threads ask for the plan meanwhile
        plan = EmulatedPlan(g, builtin_blas)
        plan.executor = _EmulatorPerRun(plan.plan)
        return plan

    return GpuExecutable(graph, plan_factory=factory, max_concurrency=3)


def test_threads_running_two_shapes_build_each_plan_once():
    calls: list = []
    executable = _emulated(resnet_like(seed=2, batch="N", widths=(4, 8, 8), size=16), calls)

    def feeds_of(i):
        return [resnet_feeds(i, batch=1 + i % 2, size=16)["x"]]

    outputs = _together(8, lambda i: executable.run(feeds_of(i)))
    assert sorted(calls) == [((1, 3, 16, 16),), ((2, 3, 16, 16),)]
    for i, got in enumerate(outputs):
        np.testing.assert_array_equal(got[0], executable.run(feeds_of(i))[0])
    assert len(executable._plans) == 2 and executable.max_concurrency == 3


def test_max_concurrency_is_a_gpu_option_and_is_checked():
    assert "max_concurrency" in GpuTarget.options
    model = resnet_like(seed=0, batch=1, widths=(4, 8, 8), size=16).SerializeToString()
    with pytest.raises(ValueError, match="max_concurrency=0: expected a positive integer"):
        gk.parse_onnx_buffer(model).compile("gpu", max_concurrency=0)
