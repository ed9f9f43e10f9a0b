# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""GPU tunables: per step of a tunable kernel the integer attr "variant", which the kernel
reads when it is built (0 is always the heuristic the lowering would use):
  Attention  1: fused kernel, 4 warps a block; 2: fused, 8 warps; 3: unfused (two products
             and a softmax)                                   (src/gpu/attention_flash.hip);
             4: fused on tensor cores for float16 / bfloat16 (src/gpu/attention_mma.hip,
             also the heuristic's choice there; float32 steps get the 8-warp kernel);
             5: float32 on tensor cores, products split three ways for float32 accuracy
             (src/gpu/attention_mma_f32.hip, the heuristic's choice for float32 steps with
             head sizes up to 64; half steps get attention_mma.hip)
  Conv       1-4: cuDNN's fused call (bias + activation + residual) with its k-th heuristic
             algorithm; 5-8: the plain call + graphkiln's epilogue kernel, k-th algorithm;
             9: graphkiln's im2col + GEMM (src/gpu/conv_cudnn.hip). Without a variant the
             step times cuDNN's first choices when it is built (a database miss).
Both kernels' variants exist on NVIDIA builds only: AMD builds tune nothing yet.

`tune_plan(plan, mode, build)` runs after lowering, before the plan's executor is built
(`build(plan)` makes a GpuExecutor of the plan's current steps):
  "lookup"      each tunable step's key is looked up; a hit sets its variant;
  "exhaustive"  one executor is built per candidate (candidate c sets variant c on every
                tunable step that has one), each timed step by step on the device over
                interleaved rounds; per problem the fastest candidate is stored and set;
  "off"         nothing.
Keys name the GPU (name and ISA), graphkiln's version and the GPU toolkit's, and the step.
"""

from __future__ import annotations

import statistics
from functools import cache

from .counters import count
from .db import TuningDB, TuningKey
from .keys import problem_key
from .protocol import random_inputs, tune_steps

TARGET = "gpu"
VARIANTS = {"Attention": 5, "Conv": 9}  # candidates beyond the heuristic, per kernel
ROUNDS = 12  # interleaved rounds of step-by-step timing per candidate
MIN_GAIN = 0.03  # a candidate must beat the heuristic by 3% to replace it

_progress = None


def set_progress(callback) -> None:
    """callback(done, total, what) during exhaustive tuning; None to stop."""
    global _progress
    _progress = callback


@cache
def _variants() -> dict:
    from .._native import load_core

    if load_core().build_info().get("gpu_platform") == "amd":
        return {}  # the fused attention and cuDNN are NVIDIA-only: nothing to choose between
    return VARIANTS


@cache
def device() -> str:
    from ..device import check_gpu_compatibility

    verdict = check_gpu_compatibility()
    gpu = verdict.usable[0] if verdict.usable else None
    return f"{getattr(gpu, 'name', '?')}/{getattr(gpu, 'arch', '?')}"


@cache
def versions() -> dict:
    from .. import __version__
    from .._native import load_core

    info = load_core().build_info()
    return {"graphkiln": __version__, "toolkit": info.get("gpu_toolkit", "?")}


def describe(plan, step) -> dict:
    from .cpu import _tensor

    attrs = {k: v for k, v in step.attrs.items() if k != "variant"}
    return {
        "kernel": step.kernel,
        "attrs": attrs,
        "inputs": [None if s is None else _tensor(plan, s) for s in step.inputs],
        "outputs": [_tensor(plan, s) for s in step.outputs],
    }


def step_key(plan, step) -> TuningKey:
    return problem_key(TARGET, device(), versions(), describe(plan, step))


def tunable_steps(plan) -> list:
    return [s for s in plan.steps if _variants().get(s.kernel, 0) > 0]


def tune_plan(plan, mode: str, build, db: TuningDB | None = None) -> dict:
    """Look up or measure the tunable steps of `plan`, setting their "variant" attrs.
    Returns {"steps", "hits", "misses", "tuned"}."""
    steps = tunable_steps(plan) if mode != "off" else []
    return tune_steps(
        steps,
        mode,
        lambda: [step_key(plan, step) for step in steps],
        lambda keys: measure(plan, steps, keys, build),
        _apply,
        db,
    )


def _apply(step, solution: dict) -> None:
    variant = int(solution.get("variant", 0))
    if variant:
        step.attrs["variant"] = variant
    else:
        step.attrs.pop("variant", None)


def measure(plan, steps, keys, build) -> dict:
    """{problem: (solution, ms)}: candidate c is the plan with variant c on every tunable step
    that offers it (the heuristic elsewhere); all candidates' executors are timed step by step
    in interleaved rounds, and per problem the candidate with the least summed median time of
    its steps wins (it must beat the heuristic by MIN_GAIN)."""
    index = {id(step): i for i, step in enumerate(plan.steps)}
    n_candidates = 1 + max(VARIANTS[s.kernel] for s in steps)
    arrays = random_inputs(plan)
    built = []
    for c in range(n_candidates):
        if _progress is not None:
            _progress(c, n_candidates, f"building candidate {c}")
        saved = [dict(s.attrs) for s in steps]
        for s in steps:
            if 0 < c <= VARIANTS[s.kernel]:
                s.attrs["variant"] = c
        try:
            executor = build(plan)
        except (RuntimeError, ValueError):
            executor = None  # a variant this build cannot make: not a candidate
        finally:
            for s, a in zip(steps, saved):
                s.attrs = a
        if executor is None and c == 0:
            return {}
        if executor is not None:
            executor.run(arrays)  # warm-up (lazy library set-up)
            built.append((c, executor))
    times: dict[int, list[list[float]]] = {c: [] for c, _ in built}
    for r in range(ROUNDS):
        if _progress is not None:
            _progress(r, ROUNDS, "timing candidates")
        for c, executor in built:
            times[c].append([ms for _, ms in executor.profile(arrays)])
    count("benchmarks", len(built) * len({k.problem for k in keys}))
    median = {
        c: [statistics.median(run[i] for run in runs) for i in range(len(runs[0]))]
        for c, runs in times.items()
    }
    by_problem: dict[str, list] = {}
    for step, key in zip(steps, keys):
        by_problem.setdefault(key.problem, []).append(step)
    out = {}
    for problem, members in by_problem.items():

        def total(c, members=members):
            return sum(median[c][index[id(s)]] for s in members)

        base = total(0)
        offered = [c for c in median if c <= VARIANTS[members[0].kernel]]
        best = min(offered, key=total)
        if total(best) > base * (1 - MIN_GAIN):
            best = 0
        out[problem] = (
            {"variant": best, "heuristic_ms": base / len(members), "candidates": len(offered)},
            total(best) / len(members),
        )
    return out
