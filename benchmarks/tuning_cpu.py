#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The kernel-tuning database on the cpu target (a benchmark, not a test).

    GRAPHKILN_CORE_DIR=build/x PYTHONPATH=python python benchmarks/tuning_cpu.py \
        [--dir /work/models] [--models resnet50,mobilenet_v3_small] [--rounds 15]

Per model, against a fresh database in a temporary folder:
  - compile + first run, untuned (tuning=False), exhaustive (exhaustive_tune=True) and warm
    (a plain compile reading the database), with the tuning counters of each: a warm
    compile must measure nothing;
  - latency untuned vs tuned: the two programs run interleaved (--rounds rounds of --runs
    runs each; medians of the per-round means), since the machine may be shared;
  - both programs' outputs against the recorded ones (max abs difference).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import graphkiln
from graphkiln import tuning


def timed_compile(path: str, feeds: dict, **options):
    tuning.reset_counters()
    prog = graphkiln.parse_onnx(path)
    start = time.perf_counter()
    prog.compile("cpu", **options)
    prog.run(feeds)  # plans of dynamic-shape models are made here
    return prog, time.perf_counter() - start, tuning.counters()


def latency(progs: list, feeds: dict, rounds: int, runs: int) -> list[tuple[float, float]]:
    """(median of the per-round means, 20th percentile of single runs) per program, the
    programs run interleaved round by round."""
    for p in progs:
        p.run(feeds)
    per_round: list[list[float]] = [[] for _ in progs]
    single: list[list[float]] = [[] for _ in progs]
    for _ in range(rounds):
        for i, p in enumerate(progs):
            total = 0.0
            for _ in range(runs):
                start = time.perf_counter()
                p.run(feeds)
                single[i].append((time.perf_counter() - start) * 1e3)
                total += single[i][-1]
            per_round[i].append(total / runs)
    return [(statistics.median(t), float(np.percentile(s, 20))) for t, s in zip(per_round, single)]


def measure(path: str, rounds: int, runs: int) -> dict:
    data = np.load(path[:-5] + ".npz")
    prog0 = graphkiln.parse_onnx(path)
    feeds = {n: data["input:" + n] for n in prog0.get_parameter_names()}
    expected = [data[k] for k in data.files if k.startswith("output:")]
    untuned, untuned_s, _ = timed_compile(path, feeds, tuning=False)
    _, exhaustive_s, exhaustive_c = timed_compile(path, feeds, exhaustive_tune=True)
    tuned, warm_s, warm_c = timed_compile(path, feeds)
    untuned_ms, tuned_ms = latency([untuned, tuned], feeds, rounds, runs)

    def diff(prog):
        return max(float(np.max(np.abs(a - b))) for a, b in zip(prog.run(feeds), expected))

    solutions = [
        json.loads(r["solution"])["attrs"] for r in tuning.TuningDB(tuning.default_path()).rows()
    ]
    changed = sum(1 for a in solutions if a)
    fewer_threads = sum(1 for a in solutions if "num_threads" in a)
    other_impl = sum(1 for a in solutions if "impl_index" in a)
    return {
        "untuned_s": untuned_s,
        "exhaustive_s": exhaustive_s,
        "warm_s": warm_s,
        "exhaustive": exhaustive_c,
        "warm": warm_c,
        "untuned_ms": untuned_ms,
        "tuned_ms": tuned_ms,
        "diff_untuned": diff(untuned),
        "diff_tuned": diff(tuned),
        "rows": len(solutions),
        "changed": changed,
        "fewer_threads": fewer_threads,
        "other_impl": other_impl,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/work/models")
    parser.add_argument("--models", default="resnet50,mobilenet_v3_small")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from graphkiln.targets.cpu.threads import num_threads
    from graphkiln.tuning import cpu as cpu_tuning

    import warnings

    warnings.simplefilter("ignore", tuning.TuningWarning)  # the load is printed instead
    print(
        f"cpu target, {num_threads()} threads, ISA {cpu_tuning.device()}, "
        f"versions {cpu_tuning.versions()}, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "| model | compile untuned s | exhaustive s (benchmarks) | warm s (benchmarks, hits) "
        "| warm speed-up | rows (changed: fewer threads, other impl) | untuned ms median (p20) "
        "| tuned ms median (p20) | tuned gain median (p20) | max abs diff untuned / tuned |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as folder:
            os.environ["GRAPHKILN_TUNING_DB"] = os.path.join(folder, "tuning.sqlite")
            r = measure(os.path.join(args.dir, name + ".onnx"), args.rounds, args.runs)
        print(
            f"| {name} | {r['untuned_s']:.2f} | {r['exhaustive_s']:.2f} "
            f"({r['exhaustive']['benchmarks']}) | {r['warm_s']:.2f} "
            f"({r['warm']['benchmarks']}, {r['warm']['hits']}) | "
            f"{r['exhaustive_s'] / r['warm_s']:.1f}x | {r['rows']} "
            f"({r['changed']}: {r['fewer_threads']}, {r['other_impl']}) | "
            f"{r['untuned_ms'][0]:.2f} ({r['untuned_ms'][1]:.2f}) | "
            f"{r['tuned_ms'][0]:.2f} ({r['tuned_ms'][1]:.2f}) | "
            f"{(r['untuned_ms'][0] / r['tuned_ms'][0] - 1) * 100:+.1f}% "
            f"({(r['untuned_ms'][1] / r['tuned_ms'][1] - 1) * 100:+.1f}%) | "
            f"{r['diff_untuned']:.2e} / {r['diff_tuned']:.2e} |",
            flush=True,
        )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
