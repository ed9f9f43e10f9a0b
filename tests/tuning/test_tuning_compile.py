# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Tuning through compile(): exhaustive_tune measures and stores, a plain compile reads the
database (no benchmarking), results stay equal to ref; the `graphkiln tune` CLI."""

import os

import numpy as np
import pytest

import graphkiln
from graphkiln import tuning
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.cli.main import main
from graphkiln.tuning import cpu as cpu_tuning


def _core_or_skip():
    from graphkiln._native import load_core

    try:
        return load_core()
    except Exception as exc:  # noqa: BLE001  # pragma: no cover - a build without the core
        pytest.skip(f"no C++ core: {exc}")


@pytest.fixture
def db_path(tmp_path, monkeypatch):
    _core_or_skip()
    path = str(tmp_path / "tuning.sqlite")
    monkeypatch.setenv("GRAPHKILN_TUNING_DB", path)
    return path


def _feeds(prog, seed=0):
    rng = np.random.default_rng(seed)
    shapes = prog.get_parameter_shapes()
    return {
        name: rng.standard_normal([d if isinstance(d, int) else 1 for d in t.dims]).astype(
            np.float32
        )
        for name, t in shapes.items()
    }


def test_warm_compile_performs_no_benchmarking(db_path):
    tuning.reset_counters()
    cold = graphkiln.parse_onnx(EXAMPLE_MODEL)
    feeds = _feeds(cold)
    cold.compile("cpu", exhaustive_tune=True)
    out_cold = cold.run(feeds)
    first = tuning.counters()
    assert first["benchmarks"] > 0 and first["tuned"] > 0
    assert len(tuning.TuningDB(db_path)) == first["tuned"]

    tuning.reset_counters()
    warm = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("cpu")
    out_warm = warm.run(feeds)
    second = tuning.counters()
    assert second["benchmarks"] == 0 and second["tuned"] == 0
    assert second["hits"] >= first["tuned"] and second["misses"] == 0

    ref = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("ref").run(feeds)
    for a, b, r in zip(out_cold, out_warm, ref):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(b, r, rtol=1e-4, atol=1e-4)


def test_without_database_compile_creates_nothing(db_path):
    tuning.reset_counters()
    prog = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("cpu")
    prog.run(_feeds(prog))
    assert not os.path.exists(db_path)
    assert tuning.counters()["misses"] > 0 and tuning.counters()["benchmarks"] == 0


def test_tuning_false_ignores_database(db_path):
    graphkiln.parse_onnx(EXAMPLE_MODEL).compile("cpu", exhaustive_tune=True)
    tuning.reset_counters()
    graphkiln.parse_onnx(EXAMPLE_MODEL).compile("cpu", tuning=False)
    assert tuning.counters() == {"benchmarks": 0, "tuned": 0, "hits": 0, "misses": 0}


def test_every_candidate_matches_the_heuristic(db_path):
    """Each candidate configuration (impl_index, num_threads) computes the same result."""
    from graphkiln.targets.native.lower import LoweringContext
    from graphkiln.targets.cpu.table import LOWERINGS
    from graphkiln.tuning.cpu import _one_step, candidates, tunable

    prog = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("cpu", tuning=False)
    graph = prog._executable.graph
    nodes = [n for n in graph.nodes if n.op != "Constant"]
    plan = LoweringContext(nodes, list(graph.inputs), list(graph.outputs), LOWERINGS).lower_all()
    steps = [s for s in plan.steps if tunable(plan, s)]
    assert steps
    checked = 0
    for step in steps:
        base = None
        for attrs in candidates(2):
            try:
                executor, arrays = _one_step(plan, step, attrs, 2)
            except (RuntimeError, ValueError):
                continue
            out = executor.run(arrays)
            if base is None:
                base = out
                continue
            checked += 1
            for a, b in zip(out, base):
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    assert checked > 0


def test_thread_candidates():
    assert cpu_tuning.thread_candidates(1) == [1]
    assert cpu_tuning.thread_candidates(2) == [2, 1]
    assert cpu_tuning.thread_candidates(16) == [16, 8, 4, 1]


def test_cli_tune_export_import(db_path, tmp_path, capsys):
    assert main(["tune", EXAMPLE_MODEL, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "tuned" in out
    rows = len(tuning.TuningDB(db_path))
    assert rows > 0
    export = str(tmp_path / "rows.json")
    assert main(["tune", "--export", export]) == 0
    other = str(tmp_path / "other.sqlite")
    assert main(["tune", "--db", other, "--import", export]) == 0
    assert len(tuning.TuningDB(other)) == rows
    assert tuning.TuningDB(other).rows() == tuning.TuningDB(db_path).rows()


def test_cli_progress_bar(db_path, capsys):
    assert main(["tune", EXAMPLE_MODEL]) == 0
    err = capsys.readouterr().err
    assert "tuning [" in err and "#" in err
