# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Where a new input shape's time goes: one program with symbolic dims (the models of
dynamic_shapes.py) run at --shapes new shapes after a first one, each first run split into
the phases the target goes through (wall time of the functions below, summed per shape).

    PYTHONPATH=python python benchmarks/new_shape_phases.py --target cpu
    PYTHONPATH=python python benchmarks/new_shape_phases.py --target gpu   # on a GPU machine

Phases (ms per new shape, medians over the shapes):
- cpu: specialize (targets/native/specialize.py), lower (split_segments minus the executor
  build), build_executor (the C++ plan: oneDNN primitives and the rest);
- gpu: specialize, lower_plan, tune_plan, GpuExecutor (the C++ plan: JIT-compiled
  pointwise kernels, cuBLAS / cuDNN plans), pointwise_source (how many generated kernel
  sources, and the Python time to write them);
- run 1 / run 2: the shape's first two runs whole (on gpu the second captures the graph),
  hit: a run of a known shape.
This is a diagnostic for the per-shape cost that dynamic_shapes.py reports; it patches the
named functions with timers for its own process only."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


class Timers:
    def __init__(self):
        self.total: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, owner, name: str, label: str | None = None) -> None:
        original = getattr(owner, name)
        label = label or name

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.total[label] = self.total.get(label, 0.0) + time.perf_counter() - start
                self.calls[label] = self.calls.get(label, 0) + 1

        setattr(owner, name, timed)

    def take(self) -> tuple[dict, dict]:
        out = (dict(self.total), dict(self.calls))
        self.total.clear()
        self.calls.clear()
        return out


def patch(target: str, timers: Timers) -> None:
    if target == "cpu":
        from graphkiln.targets.cpu import segments, target as cpu_target

        timers.wrap(cpu_target, "plan_graph", "specialize")
        timers.wrap(cpu_target, "split_segments", "split_segments")
        timers.wrap(segments, "build_executor")
    else:
        from graphkiln._native import load_core
        from graphkiln.targets.gpu import codegen, target as gpu_target
        from graphkiln.tuning import gpu as tuning_gpu

        timers.wrap(gpu_target, "specialize")
        timers.wrap(gpu_target, "lower_plan")
        timers.wrap(tuning_gpu, "tune_plan")
        timers.wrap(load_core(), "GpuExecutor")
        for module in list(sys.modules.values()):  # every importer of pointwise_source
            if getattr(
                module, "pointwise_source", None
            ) is codegen.pointwise_source and module.__name__.startswith("graphkiln"):
                timers.wrap(module, "pointwise_source")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--models", default="ocr,bert")
    parser.add_argument("--shapes", type=int, default=8, help="new shapes per model")
    parser.add_argument(
        "--start",
        type=int,
        default=None,
        help="the first size (ocr width, default 160; bert length, default "
        "16); the next ones follow by 16 (ocr) or 8 (bert)",
    )
    args = parser.parse_args(argv)

    import concurrency_models as cm
    import graphkiln

    timers = Timers()
    patch(args.target, timers)
    for name in args.models.split(","):
        if name == "ocr":
            model = cm.ocr_recognizer(seed=0)
            sizes = [(args.start or 160) + 16 * k for k in range(args.shapes + 1)]

            def feeds(i, w):
                rng = np.random.default_rng(i)
                return {"x": rng.standard_normal((1, 3, 48, w)).astype(np.float32)}
        else:
            model = cm.bert_dynamic_seq(seed=0, vocab=1000)
            sizes = [(args.start or 16) + 8 * k for k in range(args.shapes + 1)]

            def feeds(i, s):
                return cm.bert_feeds(i, seq=s, vocab=1000)

        prog = graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
        start = time.perf_counter()
        prog.compile(args.target)
        compile_ms = (time.perf_counter() - start) * 1e3
        rows: list[dict] = []
        for k, size in enumerate(sizes):
            f = feeds(k, size)
            timers.take()
            runs = []
            for _ in range(3):
                start = time.perf_counter()
                prog.run(f)
                runs.append((time.perf_counter() - start) * 1e3)
            total, calls = timers.take()
            row = {key: value * 1e3 for key, value in total.items()}
            row.update({f"{key} calls": n for key, n in calls.items()})
            row.update({"run 1": runs[0], "run 2": runs[1], "hit": runs[2]})
            rows.append(row)
        first, rest = rows[0], rows[1:]
        print(
            f"## {name} on {args.target}: compile() {compile_ms:.1f} ms, first shape "
            f"(run 1 + run 2 - 2 hits) {first['run 1'] + first['run 2'] - 2 * first['hit']:.1f} ms"
        )
        keys = sorted({key for row in rest for key in row})
        for key in keys:
            values = [row.get(key, 0.0) for row in rest]
            print(
                f"  {key:28s} median {statistics.median(values):9.2f}  "
                f"(first shape {first.get(key, 0.0):9.2f})"
            )
        new = [row["run 1"] + row["run 2"] - 2 * row["hit"] for row in rest]
        print(f"  {'new shape (runs 1+2 - 2 hits)':28s} median {statistics.median(new):9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
