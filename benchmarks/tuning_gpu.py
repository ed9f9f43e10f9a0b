#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The kernel-tuning database on the gpu target (a benchmark, not a test; needs torch to
build the models, as benchmarks/gpu_vs_torch.py does).

    python3 benchmarks/tuning_gpu.py [--models resnet50:64,bert_base:32] [--fp16]

Per model (name:batch), against a fresh database in a temporary folder: compile untuned
(tuning=False), exhaustive (exhaustive_tune=True) and warm (a plain compile reading the
database), with the tuning counters of each (a warm compile must measure nothing); then
the untuned and tuned programs' latency, interleaved round by round (median of per-round
medians; device inputs, host outputs), and their outputs against each other.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_vs_torch import build_torch_model, export  # noqa: E402


def timed_compile(path: str, **options):
    import graphkiln
    from graphkiln import tuning

    tuning.reset_counters()
    start = time.perf_counter()
    program = graphkiln.parse_onnx(path, default_dim=1)  # static: compile builds the plan
    program.compile("gpu", **options)
    return program._executable, time.perf_counter() - start, tuning.counters()


def latency(executables, inputs, rounds: int, runs: int) -> list[float]:
    for e in executables:
        e.run(inputs)
        e.run(inputs)  # the second run captures the graph
    per_round = [[] for _ in executables]
    for _ in range(rounds):
        for i, e in enumerate(executables):
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                e.run(inputs)
                times.append((time.perf_counter() - start) * 1e3)
            per_round[i].append(statistics.median(times))
    return [statistics.median(r) for r in per_round]


def print_rows(rows) -> None:
    """One line per stored problem: kernel, input shapes and dtype, the chosen variant,
    the heuristic's and the winner's per-step time."""
    for row in rows:
        detail, solution = json.loads(row["detail"]), json.loads(row["solution"])
        shapes = " ".join(
            "x".join(map(str, t["dims"])) if t else "-"
            for t in detail["inputs"]
            if isinstance(t, dict) or t is None
        )
        dtype = next((t.get("dtype") for t in detail["inputs"] if t), "?")
        print(
            f"    row {row['kernel']:<9} {dtype:<8} {shapes:<44} variant "
            f"{solution.get('variant', 0)} of {solution.get('candidates', '?')}: "
            f"{solution.get('heuristic_ms', float('nan')):.4f} -> {row['ms']:.4f} ms",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--models",
        default="resnet50:64,bert_base:32",
        help="name:batch, comma-separated (names of gpu_vs_torch.py)",
    )
    parser.add_argument("--fp16", action="store_true", help="compile with fp16=True")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--rows",
        action="store_true",
        help="also list every stored row: kernel, shapes, variant, times",
    )
    args = parser.parse_args()
    from graphkiln import tuning
    from graphkiln.tuning import gpu as gpu_tuning

    extra = {"fp16": True} if args.fp16 else {}
    print(
        f"gpu target on {gpu_tuning.device()}, versions {gpu_tuning.versions()}, "
        f"{'fp16' if args.fp16 else 'fp32'}"
    )
    print(
        "| model | untuned compile s | exhaustive s (benchmarks) | warm s (benchmarks, hits) "
        "| warm speed-up | rows (changed) | untuned ms | tuned ms | tuned gain "
        "| max abs diff tuned vs untuned |"
    )
    print("| --- " * 10 + "|")
    with tempfile.TemporaryDirectory() as folder:
        for item in args.models.split(","):
            name, batch = item.split(":")
            model, inputs, names, output = build_torch_model(name, int(batch))
            path = os.path.join(folder, f"{name}_b{batch}.onnx")
            export(model, inputs, names, output, path)
            os.environ["GRAPHKILN_TUNING_DB"] = os.path.join(folder, f"{name}.sqlite")
            device_inputs = [t.cuda().contiguous() for t in inputs]
            untuned, untuned_s, _ = timed_compile(path, tuning=False, **extra)
            _, exhaustive_s, exhaustive_c = timed_compile(path, exhaustive_tune=True, **extra)
            tuned, warm_s, warm_c = timed_compile(path, **extra)
            untuned_ms, tuned_ms = latency([untuned, tuned], device_inputs, args.rounds, args.runs)
            diff = float(
                np.max(np.abs(untuned.run(device_inputs)[0] - tuned.run(device_inputs)[0]))
            )
            rows = [
                json.loads(r["solution"])
                for r in tuning.TuningDB(tuning.default_path()).rows("gpu")
            ]
            changed = sum(1 for r in rows if r.get("variant"))
            print(
                f"| {name} b{batch} | {untuned_s:.2f} | {exhaustive_s:.2f} "
                f"({exhaustive_c['benchmarks']}) | {warm_s:.2f} ({warm_c['benchmarks']}, "
                f"{warm_c['hits']}) | {exhaustive_s / warm_s:.1f}x | {len(rows)} ({changed}) "
                f"| {untuned_ms:.3f} | {tuned_ms:.3f} | {(untuned_ms / tuned_ms - 1) * 100:+.1f}% "
                f"| {diff:.2e} |",
                flush=True,
            )
            if args.rows:
                print_rows(tuning.TuningDB(tuning.default_path()).rows("gpu"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
