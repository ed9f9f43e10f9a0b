#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Compile time of the full pass pipeline on real architectures (a benchmark, not a test).

    PYTHONPATH=python python benchmarks/compile_time.py [--dir /work/models] [--models a,b]

Models come from tools/export_real_models.py. Per model: import time, compile time (median
of --repeat compiles of fresh imports), ONNX nodes, kernels after fusion, attention ops
recognized and the three slowest passes. (Arena figures are the cpu / gpu plans' own:
`prog.stats()["arena_bytes"]` after compiling for those targets; ref has none.)
The optimized program is also run once against the unoptimized one on the recorded input
(max abs difference), so a fast but wrong pipeline cannot look good here.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time

import numpy as np

import graphkiln


def measure(path: str, repeat: int) -> dict:
    import onnx

    onnx_nodes = len(onnx.load(path, load_external_data=False).graph.node)
    start = time.perf_counter()
    graphkiln.parse_onnx(path, default_dim=1)  # static shapes, as these figures were taken
    import_s = time.perf_counter() - start
    times, prog = [], None
    for _ in range(repeat):
        prog = graphkiln.parse_onnx(path, default_dim=1)
        start = time.perf_counter()
        prog.compile("ref", optimize=True)
        times.append(time.perf_counter() - start)
    stats = prog.stats()
    slowest = sorted(stats["passes"], key=lambda p: -p["ms"])[:3]
    row = {
        "onnx_nodes": onnx_nodes,
        "import_s": import_s,
        "compile_s": statistics.median(times),
        "kernels": stats["kernels"],
        "nodes_out": stats["nodes_out"],
        "attention": sum(1 for n in prog.compiled_graph.nodes if n.op == "Attention"),
        "slowest": ", ".join(f"{p['name']} {p['ms']:.0f}" for p in slowest),
    }
    npz = path[:-5] + ".npz"
    if os.path.exists(npz):
        data = np.load(npz)
        feeds = {n: data["input:" + n] for n in prog.get_parameter_names()}
        plain = graphkiln.parse_onnx(path, default_dim=1).compile("ref").run(feeds)
        optimized = prog.run(feeds)
        row["max_abs_diff"] = max(float(np.max(np.abs(a - b))) for a, b in zip(plain, optimized))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", default="/work/models")
    parser.add_argument("--models", default="")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    names = (
        args.models.split(",")
        if args.models
        else [os.path.basename(p)[:-5] for p in sorted(glob.glob(os.path.join(args.dir, "*.onnx")))]
    )
    print(
        f"graphkiln {graphkiln.__version__}, full pipeline on ref, median of {args.repeat} compiles"
    )
    print(
        "| model | ONNX nodes | import s | compile s | kernels | attention ops "
        "| opt vs plain max abs | slowest passes (ms) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        r = measure(os.path.join(args.dir, name + ".onnx"), args.repeat)
        print(
            f"| {name} | {r['onnx_nodes']} | {r['import_s']:.2f} | {r['compile_s']:.2f} | "
            f"{r['kernels']} | {r['attention']} | {r.get('max_abs_diff', float('nan')):.2g} | "
            f"{r['slowest']} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
