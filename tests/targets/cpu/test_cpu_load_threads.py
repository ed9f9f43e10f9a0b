# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Runs under load: while other processes keep the cores busy (threads.LoadMonitor, fed a
fake /proc/loadavg here), a program of several threads runs on its one-thread twin, with
the same results (against ref); GRAPHKILN_ADAPT_THREADS=0 keeps it on its threads."""

import threading

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.targets.cpu import threads as cpu_threads

from cpu_testing import check_cpu, node, onnx_model, rand


def _fake_proc(tmp_path):
    """A fake /proc/loadavg and /proc/self/task: write(runnable, own) sets the machine's
    runnable threads and how many of this process's are running (one more sleeping)."""
    path, tasks = tmp_path / "loadavg", tmp_path / "task"

    def write(runnable: int, own: int = 2):
        path.write_text(f"0.50 0.40 0.30 {runnable}/321 4567\n")
        for old in tasks.glob("*/stat"):
            old.unlink()
        for i in range(own + 1):
            (tasks / str(100 + i)).mkdir(parents=True, exist_ok=True)
            state = "R" if i < own else "S"
            (tasks / str(100 + i) / "stat").write_text(f"{100 + i} (py thread) {state} 1 2 3\n")

    return str(path), str(tasks), write


@pytest.fixture
def loadavg(tmp_path, monkeypatch):
    """Point the process's load monitor at files the test writes: write(runnable, own)."""
    path, tasks, write = _fake_proc(tmp_path)
    monitor = cpu_threads.LoadMonitor(path, tasks)
    monitor.SAMPLE_S = 0.0  # every call samples
    monitor.SMOOTH_S = 1e-9  # and takes the sample as it is
    monkeypatch.setattr(cpu_threads, "LOAD", monitor)
    monkeypatch.setattr("graphkiln.targets.cpu.target.LOAD", monitor)
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: 2)
    monkeypatch.setenv("GRAPHKILN_ADAPT_THREADS", "1")
    write(2)
    return write


def _model():
    inits = {
        "w1": rand((16, 3, 3, 3), 1),
        "b1": rand((16,), 2),
        "w2": rand((8, 16, 1, 1), 3),
        "axes": np.array([2, 3], np.int64),
    }
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]),
        node("Relu", ["c"], ["r"]),
        node("Conv", ["r", "w2"], ["d"]),
        node("ReduceMean", ["d", "axes"], ["y"], keepdims=0),
    ]
    return onnx_model(nodes, {"x": (2, 3, 12, 12)}, {"y": (2, 8)}, inits)


def _compile(monkeypatch, threads=2):
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", str(threads))
    return gk.parse_onnx_buffer(_model()).compile("cpu")


def test_monitor_counts_runnable_threads_of_others(loadavg):
    monitor = cpu_threads.LOAD
    loadavg(2)  # this process's two threads: nobody else
    assert monitor.others(2) == 0.0 and not monitor.crowded(2)
    loadavg(4)  # two more: both CPUs taken by other work
    assert monitor.others(2) == 2.0 and monitor.crowded(2)
    loadavg(3)  # one more: one CPU free, fewer than two threads want
    assert monitor.crowded(2)
    assert not monitor.crowded(1)  # one thread never needs to drop
    loadavg(4, own=4)  # this process's other pool spinning: not other work
    assert monitor.others(2) == 0.0 and not monitor.crowded(2)


def test_monitor_smooths_and_samples_at_most_every_period(tmp_path):
    path, tasks, write = _fake_proc(tmp_path)
    monitor = cpu_threads.LoadMonitor(path, tasks)
    write(6)
    # the first sample counts as one sampling period against a start of no other work
    first = 4.0 * (1.0 - np.exp(-monitor.SAMPLE_S / monitor.SMOOTH_S))
    assert np.isclose(monitor.others(2, now=10.0), first)
    assert first < 0.5  # one look at a busy machine: not crowded on 2 CPUs (needs > 0.5)
    write(2)
    assert monitor.others(2, now=10.05) == first  # within SAMPLE_S: the last value
    smoothed = monitor.others(2, now=12.0)  # one SMOOTH_S later: part way down
    assert np.isclose(smoothed, first * np.exp(-2.0 / monitor.SMOOTH_S))


def test_monitor_turns_crowded_under_sustained_load(tmp_path):
    """Two busy processes beside a 2-thread run: more than 0.5 other runnable threads
    (crowded on 2 CPUs) within a few samples, and under it again a few smoothing periods
    after they stop."""
    path, tasks, write = _fake_proc(tmp_path)
    monitor = cpu_threads.LoadMonitor(path, tasks)
    write(4)
    now, seen = 10.0, []
    for _ in range(5):
        monitor.others(2, now=now)
        seen.append(monitor._others)
        now += monitor.SAMPLE_S
    assert seen[0] < 0.5 < seen[-1]
    write(2)
    assert monitor.others(2, now=now + 3 * monitor.SMOOTH_S) < 0.5


def test_monitor_is_off_without_proc_loadavg(tmp_path):
    monitor = cpu_threads.LoadMonitor(str(tmp_path / "missing"), str(tmp_path / "none"))
    assert monitor.others(2) == 0.0 and not monitor.crowded(2)


def test_monitor_without_task_list_counts_the_run_threads_as_its_own(tmp_path):
    path, _, write = _fake_proc(tmp_path)
    monitor = cpu_threads.LoadMonitor(path, str(tmp_path / "none"))
    monitor.SMOOTH_S = 1e-9  # the sample as it is
    write(5)
    assert monitor.others(2) == 3.0


def test_monitor_reads_this_process(monkeypatch):
    """On Linux, the real files: this (single-threaded at this point) test is one of the
    machine's runnable threads."""
    monitor = cpu_threads.LoadMonitor()
    if monitor._runnable() is None:
        pytest.skip("no /proc/loadavg")
    assert monitor._own_runnable() >= 1
    assert monitor.others(1) >= 0.0


def test_crowded_runs_take_the_one_thread_twin(loadavg, monkeypatch):
    program = _compile(monkeypatch)
    executable = program._executable
    x = rand((2, 3, 12, 12), 4)
    expected = gk.parse_onnx_buffer(_model()).compile("ref").run({"x": x})[0]
    loadavg(2)
    np.testing.assert_allclose(program.run({"x": x})[0], expected, rtol=1e-4, atol=1e-5)
    assert executable._narrow is None  # nobody else running: its own threads
    loadavg(5)
    np.testing.assert_allclose(program.run({"x": x})[0], expected, rtol=1e-4, atol=1e-5)
    twin = executable._narrow
    assert twin is not None and twin.threads == 1
    assert twin.packing is executable.packing and twin.arena_pool is executable.arena_pool
    loadavg(2)  # the load is gone: back to the program's own plans
    program.run({"x": x})
    assert executable._narrow is twin  # kept for the next crowded run


def test_crowded_concurrent_runs_build_one_twin(loadavg, monkeypatch):
    program = _compile(monkeypatch)
    loadavg(6)
    x = rand((2, 3, 12, 12), 5)
    expected = gk.parse_onnx_buffer(_model()).compile("ref").run({"x": x})[0]
    results, twins = [], set()

    def call():
        results.append(program.run({"x": x})[0])
        twins.add(id(program._executable._narrow))

    callers = [threading.Thread(target=call) for _ in range(6)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert len(results) == 6 and len(twins) == 1
    for r in results:
        np.testing.assert_allclose(r, expected, rtol=1e-4, atol=1e-5)


def test_adapt_threads_off_keeps_the_threads(loadavg, monkeypatch):
    program = _compile(monkeypatch)
    loadavg(6)
    monkeypatch.setenv("GRAPHKILN_ADAPT_THREADS", "0")
    check_cpu(_model(), {"x": rand((2, 3, 12, 12), 6)}, rtol=1e-4, atol=1e-5)
    program.run({"x": rand((2, 3, 12, 12), 7)})
    assert program._executable._narrow is None


def test_one_thread_program_never_needs_a_twin(loadavg, monkeypatch):
    program = _compile(monkeypatch, threads=1)
    loadavg(8)
    program.run({"x": rand((2, 3, 12, 12), 8)})
    assert program._executable._narrow is None
