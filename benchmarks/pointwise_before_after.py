# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu Pointwise interpreter of two builds of the core on the same chains, in turn: a
before / after check for changes to src/cpu/pointwise_eval.inc or src/core/pointwise_ops.def.

    PYTHONPATH=python python benchmarks/pointwise_before_after.py \\
        --cores /tmp/base-build,build/cp311-cp311-linux_x86_64 [--rounds 5] [--runs 200]

Each chain is one ONNX model (x f32[1, 96, 56, 56] through the chain) compiled on cpu; the
builds run in separate processes (GRAPHKILN_CORE_DIR), alternately, --rounds times each; the
table gives each build's median over rounds of its median over --runs runs, and the ratio
of the later build to the first (above 1: slower)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHAINS = {
    "silu": ["Sigmoid", "Mul"],
    "hardswish": ["HardSwish"],
    "gelu": ["Gelu"],
    "tanh_add": ["Tanh", "Add"],
    "leaky_relu": ["LeakyRelu"],
}


def _model(chain: list[str]):
    from onnx import TensorProto, helper

    nodes, x = [], "x"
    for i, op in enumerate(chain):
        y = f"v{i}"
        inputs = [x, "x"] if op in ("Mul", "Add") else [x]
        nodes.append(helper.make_node(op, inputs, [y]))
        x = y
    nodes[-1].output[0] = "y"
    dims = [1, 96, 56, 56]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString()


def _child(runs: int) -> None:
    import numpy as np

    import graphkiln

    x = np.random.default_rng(0).standard_normal((1, 96, 56, 56)).astype(np.float32)
    out = {}
    for name, chain in CHAINS.items():
        program = graphkiln.parse_onnx_buffer(_model(chain)).compile("cpu")
        for _ in range(10):
            program.run({"x": x})
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            program.run({"x": x})
            times.append(time.perf_counter() - start)
        out[name] = statistics.median(times) * 1e3
    print(json.dumps(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", required=True, help="two build folders, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.runs)
        return 0
    cores = args.cores.split(",")
    if len(cores) != 2:
        parser.error("--cores takes two build folders")
    results: dict[str, list[dict]] = {c: [] for c in cores}
    for _ in range(args.rounds):
        for core in cores:
            env = dict(os.environ, GRAPHKILN_CORE_DIR=core)
            text = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    "--cores",
                    args.cores,
                    "--runs",
                    str(args.runs),
                ],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            results[core].append(json.loads(text.strip().splitlines()[-1]))
    print(
        f"command: {' '.join(sys.argv)}; threads: "
        f"{os.environ.get('GRAPHKILN_NUM_THREADS', 'default')}"
    )
    print(f"| chain | {cores[0]} ms | {cores[1]} ms | ratio second / first |")
    print("| --- | --- | --- | --- |")
    for name in CHAINS:
        a = statistics.median(r[name] for r in results[cores[0]])
        b = statistics.median(r[name] for r in results[cores[1]])
        print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
