# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What every target's tuner does the same way (cpu.py, gpu.py): the process's open
databases, the three modes, storing winners and looking them up, and seeded inputs.

A target's `tune_plan` finds its tunable steps and calls `tune_steps` with
  keys()        the steps' TuningKeys (computed only when needed),
  measure(keys) {problem: (solution, ms)} for exhaustive mode,
  apply(step, solution)  what a stored solution does to a step's attrs."""

from __future__ import annotations

import os

import numpy as np

from .counters import count
from .db import TuningDB, default_path

_dbs: dict[str, TuningDB] = {}


def open_db(path: str | None = None) -> TuningDB:
    """The process's TuningDB for `path` (default: db.default_path()), opened once."""
    path = default_path() if path is None else path
    db = _dbs.get(path)
    if db is None:
        db = _dbs[path] = TuningDB(path)
    return db


def tune_steps(steps: list, mode: str, keys, measure, apply, db: TuningDB | None) -> dict:
    """mode "lookup": a hit applies the stored solution, a miss keeps the heuristic;
    "exhaustive": measure, store the winners (one transaction), apply them; "off": nothing.
    Returns {"steps", "hits", "misses", "tuned"} and counts them (counters.py)."""
    summary = {"steps": len(steps) if mode != "off" else 0, "hits": 0, "misses": 0, "tuned": 0}
    if mode == "off" or not steps:
        return summary
    if db is None:
        if mode == "lookup" and not os.path.exists(default_path()):
            count("misses", len(steps))  # nothing tuned yet: keep the heuristics, create nothing
            summary["misses"] = len(steps)
            return summary
        db = open_db()
    step_keys = keys()
    if mode == "exhaustive":
        solutions = measure(step_keys)
        rows = [
            db.row(key, *solutions[key.problem])
            for key in {k.problem: k for k in step_keys if k.problem in solutions}.values()
        ]
        db.put_rows(rows)  # one transaction per plan
        count("tuned", len(rows))
        summary["tuned"] = len(rows)
        for step, key in zip(steps, step_keys):
            if key.problem in solutions:
                apply(step, solutions[key.problem][0])
        return summary
    for step, key in zip(steps, step_keys):
        entry = db.get(key)
        if entry is None:
            count("misses")
            summary["misses"] += 1
        else:
            count("hits")
            summary["hits"] += 1
            apply(step, entry.solution)
    return summary


def random_inputs(plan) -> list[np.ndarray]:
    """Seeded inputs for a plan: floats N(0, 0.25), booleans true, integers 0 (a valid
    index into any table)."""
    rng = np.random.default_rng(0)
    arrays = []
    for s in plan.input_slots:
        slot = plan.slots[s]
        dtype = np.dtype(slot.dtype.numpy)
        if dtype.kind == "f":
            arrays.append((rng.standard_normal(slot.dims) * 0.5).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(np.ones(slot.dims, dtype))
        else:
            arrays.append(np.zeros(slot.dims, dtype))
    return arrays
