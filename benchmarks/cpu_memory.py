# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Resident memory of a process running a model many times on the cpu target.

    PYTHONPATH=python python benchmarks/cpu_memory.py --dir /work/models --models resnet50,bert \\
        --runs 1000 --record benchmarks/results/cpu_memory.md

Per model: compile, 20 warm-up runs, then --runs runs; the resident set size (from
/proc/self/statm) is read every 100 runs. Flat means the last reading is within 1 MiB of
the first after warm-up: the arena and the kernels' scratch are allocated once, and the
outputs are the caller's (dropped here each run).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

import numpy as np


def resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=os.environ.get("GRAPHKILN_MODELS", "models"))
    parser.add_argument("--models", default="resnet50,bert")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--record", help="also write the table (markdown) here")
    args = parser.parse_args(argv)
    import graphkiln

    lines = [
        f"# Resident memory over {args.runs} runs on the cpu target",
        "",
        f"command: `{' '.join(['python', *sys.argv])}`",
        "",
        "| model | after warm-up MiB | readings every 100 runs (MiB) | growth MiB | flat |",
        "| --- | ---: | --- | ---: | --- |",
    ]
    ok = True
    for name in args.models.split(","):
        data = np.load(os.path.join(args.dir, name + ".npz"))
        feeds = {k[len("input:") :]: data[k] for k in data.files if k.startswith("input:")}
        program = graphkiln.parse_onnx(os.path.join(args.dir, name + ".onnx")).compile("cpu")
        for _ in range(20):
            program.run(feeds)
        gc.collect()
        start = resident_mib()
        readings = []
        for i in range(1, args.runs + 1):
            program.run(feeds)
            if i % 100 == 0:
                gc.collect()
                readings.append(resident_mib())
        growth = readings[-1] - start
        flat = growth < 1.0
        ok &= flat
        lines.append(
            f"| {name} | {start:.1f} | {', '.join(f'{r:.1f}' for r in readings)} | "
            f"{growth:+.2f} | {'yes' if flat else 'NO'} |"
        )
        print(lines[-1], flush=True)
        del program
    if args.record:
        with open(args.record, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
