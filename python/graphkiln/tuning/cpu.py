# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""CPU tunables: per oneDNN step (Conv, MatMul) the implementation oneDNN uses
("impl_index": the k-th of primitive_desc::next_impl(), 0 = oneDNN's first choice) and the
step's own OpenMP thread count ("num_threads": a small convolution is often faster on one
thread than on two). The executor builds and runs such a step under its own count.

`tune_plan(plan, threads, mode)` runs after lowering, before the executor is built:
  mode "lookup"      each tunable step's key is looked up; a hit rewrites its attrs, a miss
                     keeps the heuristic (lowered) attrs;
  mode "exhaustive"  every tunable step is measured: the plan is built once per candidate
                     and run on seeded random inputs with per-step timing, interleaved
                     (_measure_in_plan); the winners are stored and applied;
  mode "off"         nothing.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time
import warnings
from functools import cache

import numpy as np

from .counters import count
from .db import TuningDB, TuningKey, TuningWarning
from .keys import problem_key
from .protocol import open_db, random_inputs, tune_steps  # noqa: F401 - open_db: the cpu API

TARGET = "cpu"
TUNABLE_KERNELS = ("Conv", "MatMul")
TUNABLE_ATTRS = ("impl_index", "num_threads")
MAX_IMPLS = 4  # oneDNN implementations tried: the first choice and 3 more
MIN_ROUNDS, MAX_ROUNDS = 7, 40  # interleaved rounds (one run of every candidate's plan)
ROUNDS_MS = 3000.0  # rounds are added while they fit in about this time
MIN_GAIN = 0.05  # a candidate must beat the heuristic by 5% to replace it
GROUP_BYTES = 2 << 30  # candidates' plans alive at once: their constants within this size

_progress = None


def set_progress(callback) -> None:
    """callback(done, total, step_name) during exhaustive tuning (the CLI's progress bar);
    None to stop."""
    global _progress
    _progress = callback


@cache
def device() -> str:
    from .._native import load_core

    return load_core().cpu_isa()


@cache
def versions() -> dict:
    from .. import __version__
    from .._native import load_core

    return {"graphkiln": __version__, "onednn": load_core().onednn_version()}


def _tensor(plan, slot_id: int) -> dict:
    arg = plan.tensor_arg(slot_id)
    storage = plan.storages[plan.slots[slot_id].storage]
    return {
        "dtype": arg["dtype"],
        "dims": arg["dims"],
        "strides": arg["strides"],
        "constant": storage.kind == _CONSTANT,
    }


_CONSTANT = 1


def describe(plan, step, threads: int) -> dict:
    """What decides a step's best configuration: kernel, attrs, tensors, threads."""
    attrs = {k: v for k, v in step.attrs.items() if k not in TUNABLE_ATTRS}
    return {
        "kernel": step.kernel,
        "attrs": attrs,
        "threads": threads,
        "inputs": [None if s is None else _tensor(plan, s) for s in step.inputs],
        "outputs": [_tensor(plan, s) for s in step.outputs],
    }


def tunable(plan, step) -> bool:
    if step.kernel not in TUNABLE_KERNELS:
        return False
    for s in [*step.inputs, *step.outputs]:
        if s is not None and (plan.slots[s].dtype.numpy != np.float32 or 0 in plan.slots[s].dims):
            return False
    return True


def step_key(plan, step, threads: int) -> TuningKey:
    return problem_key(TARGET, device(), versions(), describe(plan, step, threads))


def tune_plan(plan, threads: int, mode: str = "lookup", db: TuningDB | None = None) -> dict:
    """Look up or measure the tunable steps of `plan`, rewriting their attrs in place.
    Returns {"steps": tunable steps, "hits", "misses", "tuned"}."""
    steps = [s for s in plan.steps if tunable(plan, s)] if mode != "off" else []

    def measure(keys):
        _warn_if_loaded(threads)
        return _measure_in_plan(plan, steps, keys, threads)

    return tune_steps(
        steps, mode, lambda: [step_key(plan, step, threads) for step in steps], measure, _apply, db
    )


def _warn_if_loaded(threads: int) -> None:
    """Measurements reflect the machine's load: say so when other processes compete."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if cpus and load > cpus:
        warnings.warn(
            f"tuning while the load average ({load:.1f}) exceeds the {cpus} CPUs: "
            "the choices made (thread counts especially) fit this contention and "
            "may be slower on a quiet machine",
            TuningWarning,
            stacklevel=4,
        )


def _apply(step, solution: dict) -> None:
    for k, v in solution.get("attrs", {}).items():
        if k in TUNABLE_ATTRS:
            step.attrs[k] = int(v)


def thread_candidates(threads: int) -> list[int]:
    out = [threads]
    n = threads // 2
    while n >= 1 and len(out) < 3:
        out.append(n)
        n //= 2
    if out[-1] != 1:
        out.append(1)
    return out


def candidates(threads: int) -> list[dict]:
    """Attribute sets to try; the first is the heuristic (what lowering chose)."""
    out = []
    for impl, n in itertools.product(range(MAX_IMPLS), thread_candidates(threads)):
        c = {}
        if impl:
            c["impl_index"] = impl
        if n != threads:
            c["num_threads"] = n
        out.append(c)
    return out


def _measure_in_plan(plan, steps, keys, threads: int) -> dict:
    """{problem: (solution, ms)}: the whole plan is built once per candidate, every tunable
    step set to that candidate, and run on seeded random inputs with per-step timing, the
    candidates' plans interleaved round by round. Measuring in the plan (not a step alone)
    keeps the cache state real (weights are cold, inputs warm) and counts what a thread
    count change costs the following step: a step's score is its time plus that of the
    next step when that one is not tunable. Per problem the scores of all its steps are
    summed; the winner must beat the heuristic (candidate 0) by MIN_GAIN."""
    cands = candidates(threads)
    index = {id(step): i for i, step in enumerate(plan.steps)}
    tunable_ids = {id(step) for step in steps}
    scored = []  # per tunable step: plan step indices whose time counts
    for step in steps:
        i = index[id(step)]
        extra = i + 1 < len(plan.steps) and id(plan.steps[i + 1]) not in tunable_ids
        scored.append((i, i + 1) if extra else (i,))
    arrays = random_inputs(plan)
    const_bytes = sum(c.nbytes for c in plan.constants)
    group = max(2, min(len(cands), int(GROUP_BYTES // max(const_bytes, 1))))
    others = list(range(1, len(cands)))
    groups = [[0] + others[i : i + group - 1] for i in range(0, len(others), group - 1)]
    ratios: dict[int, list[float]] = {0: [1.0] * len(steps)}
    times0: list[float] | None = None
    done = 0
    for members in groups:
        built = []
        for c in members:
            if _progress is not None:
                _progress(done, len(cands), f"candidate {cands[c] or 'heuristic'}")
            ex = _plan_executor(plan, steps, cands[c], threads)
            if ex is not None:
                built.append((c, ex))
            done += c != 0 or times0 is None
        if not built or built[0][0] != 0:
            return {}  # the heuristic plan itself does not build: nothing to tune
        per = _interleaved_step_times(built, arrays)
        count("benchmarks", len(built) * len({k.problem for k in keys}))
        base = [statistics.median(sum(r[j] for j in idx) for r in per[0]) for idx in scored]
        if times0 is None:
            times0 = base
        for n, (c, _) in enumerate(built[1:], 1):
            ratios[c] = [
                statistics.median(sum(r[j] for j in idx) for r in per[n]) / max(b, 1e-9)
                for idx, b in zip(scored, base)
            ]
        del built, per
    if _progress is not None:
        _progress(len(cands), len(cands), "")
    out: dict[str, tuple[dict, float]] = {}
    by_problem: dict[str, list[int]] = {}
    for n, key in enumerate(keys):
        by_problem.setdefault(key.problem, []).append(n)
    for problem, members in by_problem.items():
        base_ms = sum(times0[n] for n in members)
        best, best_ratio = 0, 1.0
        for c, r in ratios.items():
            # the problem's steps together, weighted by their heuristic time
            ratio = sum(r[n] * times0[n] for n in members) / max(base_ms, 1e-12)
            if ratio < best_ratio:
                best, best_ratio = c, ratio
        if best_ratio > 1 - MIN_GAIN:
            best, best_ratio = 0, 1.0
        ms = base_ms * best_ratio / len(members)
        out[problem] = (
            {
                "attrs": dict(cands[best]),
                "heuristic_ms": base_ms / len(members),
                "candidates": len(ratios),
            },
            ms,
        )
    return out


def _plan_executor(plan, steps, attrs: dict, threads: int):
    """The plan built with `attrs` on every tunable step (None when it does not build)."""
    from .._native import load_core

    saved = [step.attrs for step in steps]
    try:
        for step in steps:
            step.attrs = {
                **{k: v for k, v in step.attrs.items() if k not in TUNABLE_ATTRS},
                **attrs,
            }

        def specs(slots):
            return [(plan.slots[s].dtype.numpy, list(plan.slots[s].dims)) for s in slots]

        executor = load_core().Executor(
            plan.executor_steps(),
            plan.constants,
            plan.arena_bytes,
            specs(plan.input_slots),
            specs(plan.output_slots),
            threads,
        )
    except (RuntimeError, ValueError):
        return None
    finally:
        for step, a in zip(steps, saved):
            step.attrs = a
    executor.set_profiling(True)
    return executor


def _interleaved_step_times(built, arrays) -> list[list[list[float]]]:
    """[candidate][round][step] ms: each round runs every candidate's plan once."""
    for _, executor in built:
        executor.run(arrays)  # warm-up
    start = time.perf_counter()
    built[0][1].run(arrays)
    plan_ms = (time.perf_counter() - start) * 1e3
    rounds = max(MIN_ROUNDS, min(MAX_ROUNDS, int(ROUNDS_MS / max(plan_ms * len(built), 1e-3))))
    last = [[t[2] for t in executor.step_times()] for _, executor in built]
    per: list[list[list[float]]] = [[] for _ in built]
    for _ in range(rounds):
        for n, (_, executor) in enumerate(built):
            executor.run(arrays)
            now = [t[2] for t in executor.step_times()]
            per[n].append([a - b for a, b in zip(now, last[n])])
            last[n] = now
    return per


def _extent(dims, strides) -> int:
    if any(d == 0 for d in dims):
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(dims, strides))


def _one_step(plan, step, extra: dict, threads: int):
    """(Checks and experiments; tuning measures in the whole plan.) A one-step executor for
    `step` with attrs updated by `extra`: constants stay constants (weights are packed as in
    the real plan), other tensors become the executor's inputs and outputs, filled with
    seeded random data."""
    from .._native import load_core

    rng = np.random.default_rng(0)
    constants, arrays, in_specs, out_specs = [], [], [], []
    inputs = []
    for s in step.inputs:
        if s is None:
            inputs.append(None)
            continue
        arg = dict(plan.tensor_arg(s))
        slot = plan.slots[s]
        storage = plan.storages[slot.storage]
        if storage.kind == _CONSTANT:
            arg["ref"] = (_CONSTANT, len(constants), slot.byte_offset)
            constants.append(plan.constants[storage.index])
        else:
            n = _extent(arg["dims"], arg["strides"])
            dtype = np.dtype(slot.dtype.numpy)
            arg["ref"] = (2, len(arrays), 0)
            arrays.append((rng.standard_normal(n) * 0.5).astype(dtype))
            in_specs.append((dtype, [n]))
        inputs.append(arg)
    outputs = []
    for s in step.outputs:
        arg = dict(plan.tensor_arg(s))
        arg["ref"] = (3, len(outputs), 0)
        out_specs.append(
            (np.dtype(plan.slots[s].dtype.numpy), [_extent(arg["dims"], arg["strides"])])
        )
        outputs.append(arg)
    attrs = {k: v for k, v in step.attrs.items() if k not in TUNABLE_ATTRS}
    attrs.update(extra)
    spec = {
        "kernel": step.kernel,
        "name": step.name,
        "attrs": attrs,
        "inputs": inputs,
        "outputs": outputs,
    }
    executor = load_core().Executor([spec], constants, 0, in_specs, out_specs, threads)
    return executor, arrays
