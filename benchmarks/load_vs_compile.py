#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Loading a saved compiled program against importing and compiling the model again.

    PYTHONPATH=python python benchmarks/load_vs_compile.py [--dir /work/models] [--models a,b]
        [--target ref|cpu]

Models come from tools/export_real_models.py. Per model: import + compile (ref with
optimize=True, or cpu: passes, lowering, kernels built and weights packed), median of
--repeat; the compiled program is saved (msgpack) and loaded --repeat times (median), once
more with verify_data=True (CRC-32 of every tensor byte); the ratio is
compile / load. The loaded program is run once on the recorded input and must give outputs
bit-identical to the compiled one's, so a fast but wrong load cannot look good here.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import graphkiln


def timed(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def measure(path: str, repeat: int, folder: str, target: str) -> dict:
    options = {"optimize": True} if target == "ref" else {}
    # default_dim=1: static shapes, so that compile builds (and save keeps) the whole plan
    compile_s, prog = timed(
        lambda: graphkiln.parse_onnx(path, default_dim=1).compile(target, **options), repeat
    )
    saved = os.path.join(folder, os.path.basename(path)[:-5] + ".gkp")
    start = time.perf_counter()
    graphkiln.save(prog, saved)
    save_s = time.perf_counter() - start
    load_s, loaded = timed(lambda: graphkiln.load(saved), repeat)
    verified_s, _ = timed(lambda: graphkiln.load(saved, verify_data=True), repeat)
    row = {
        "compile_s": compile_s,
        "save_s": save_s,
        "load_s": load_s,
        "verified_s": verified_s,
        "mib": os.path.getsize(saved) / 2**20,
        "identical": "n/a",
    }
    npz = path[:-5] + ".npz"
    if os.path.exists(npz):
        data = np.load(npz)
        feeds = {n: data["input:" + n] for n in prog.get_parameter_names()}
        expected, got = prog.run(feeds), loaded.run(feeds)
        row["identical"] = (
            "yes"
            if all(
                np.asarray(a).tobytes() == np.asarray(b).tobytes() for a, b in zip(expected, got)
            )
            else "NO"
        )
    os.remove(saved)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", default="/work/models")
    parser.add_argument("--models", default="")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--target", default="ref", choices=["ref", "cpu"])
    args = parser.parse_args()
    names = (
        args.models.split(",")
        if args.models
        else [os.path.basename(p)[:-5] for p in sorted(glob.glob(os.path.join(args.dir, "*.onnx")))]
    )
    label = "ref target, optimize=True" if args.target == "ref" else f"{args.target} target"
    print(
        f"graphkiln {graphkiln.__version__}, {label}, median of {args.repeat}; "
        "load = graphkiln.load of the saved msgpack file (page cache warm)"
    )
    print(
        "| model | file MiB | import+compile s | save s | load ms | load+verify_data ms | "
        "compile/load | outputs bit-identical |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    worst = None
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            r = measure(os.path.join(args.dir, name + ".onnx"), args.repeat, folder, args.target)
            ratio = r["compile_s"] / r["load_s"]
            worst = ratio if worst is None else min(worst, ratio)
            print(
                f"| {name} | {r['mib']:.1f} | {r['compile_s']:.3f} | {r['save_s']:.3f} | "
                f"{r['load_s'] * 1e3:.1f} | {r['verified_s'] * 1e3:.1f} | {ratio:.1f}x | "
                f"{r['identical']} |",
                flush=True,
            )
    print(f"smallest compile/load ratio: {worst:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
