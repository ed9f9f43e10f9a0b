# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What an If costs on cpu: a chain of --ifs small If nodes (each If(sum(h) > 0) choosing
h * a + b or h * a - b on a [1, --width] tensor) against the same chain with every If
replaced by its then-branch, timed on graphkiln and onnxruntime in the same run.

    GRAPHKILN_NUM_THREADS=1 PYTHONPATH=python:/tmp/ortsite python benchmarks/if_overhead_cpu.py \\
        [--ifs 16] [--width 64] [--runs 2000] [--record benchmarks/results/if_overhead_cpu.md]

Per-If overhead = (median of the If chain - median of the plain chain) / --ifs, in µs:
the Branch and Jump steps, the branch result copied into the If's output, and the
ReduceSum + Greater that compute each condition (the plain chain has none). onnxruntime
(intra_op_num_threads 1) runs both chains as the peer; its per-If overhead is printed beside
ours with the ratio gk/ort of the If chains."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _chain(ifs: int, width: int, with_if: bool) -> bytes:
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array(0, np.float32), "zero"),
        numpy_helper.from_array(rng.uniform(0.5, 1.0, (width,)).astype(np.float32), "a"),
        numpy_helper.from_array(rng.uniform(-0.1, 0.1, (width,)).astype(np.float32), "b"),
    ]
    nodes, h = [], "x"
    for k in range(ifs):
        out = f"h{k}"
        then_nodes = [
            helper.make_node("Mul", [h, "a"], [f"tm{k}"]),
            helper.make_node("Add", [f"tm{k}", "b"], [f"t{k}"]),
        ]
        if not with_if:
            then_nodes[-1].output[0] = out
            nodes.extend(then_nodes)
            h = out
            continue
        info = [helper.make_tensor_value_info(f"t{k}", TensorProto.FLOAT, [1, width])]
        then_g = helper.make_graph(then_nodes, f"then{k}", [], info)
        else_nodes = [
            helper.make_node("Mul", [h, "a"], [f"em{k}"]),
            helper.make_node("Sub", [f"em{k}", "b"], [f"e{k}"]),
        ]
        info = [helper.make_tensor_value_info(f"e{k}", TensorProto.FLOAT, [1, width])]
        else_g = helper.make_graph(else_nodes, f"else{k}", [], info)
        nodes += [
            helper.make_node("ReduceSum", [h], [f"s{k}"], keepdims=0),
            helper.make_node("Greater", [f"s{k}", "zero"], [f"c{k}"]),
            helper.make_node("If", [f"c{k}"], [out], then_branch=then_g, else_branch=else_g),
        ]
        h = out
    nodes.append(helper.make_node("Identity", [h], ["y"]))
    graph = helper.make_graph(
        nodes,
        "if_chain" if with_if else "plain_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _median_us(run, runs: int) -> float:
    for _ in range(min(200, runs)):
        run()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ifs", type=int, default=16)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--record", help="append the table to this markdown file")
    args = parser.parse_args(argv)

    import graphkiln as gk

    x = np.random.default_rng(1).uniform(-1, 1, (1, args.width)).astype(np.float32)
    rows = {}
    for with_if in (True, False):
        model = _chain(args.ifs, args.width, with_if)
        program = gk.parse_onnx_buffer(model).compile("cpu")
        oracle = gk.parse_onnx_buffer(model).compile("ref")
        np.testing.assert_allclose(
            program.run({"x": x})[0], oracle.run({"x": x})[0], rtol=1e-5, atol=1e-6
        )
        gk_us = _median_us(lambda p=program: p.run({"x": x}), args.runs)
        ort_us = None
        try:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            ort_us = _median_us(lambda s=session: s.run(None, {"x": x}), args.runs)
        except ImportError:
            pass
        rows[with_if] = (gk_us, ort_us)

    (gk_if, ort_if), (gk_plain, ort_plain) = rows[True], rows[False]
    per_if_gk = (gk_if - gk_plain) / args.ifs
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
        f"{os.cpu_count()} cpus, GRAPHKILN_NUM_THREADS={os.environ.get('GRAPHKILN_NUM_THREADS')}",
        "",
        f"command: python benchmarks/if_overhead_cpu.py --ifs {args.ifs} --width {args.width} "
        f"--runs {args.runs}",
        "",
        "| chain | graphkiln µs | onnxruntime µs | gk/ort |",
        "| --- | --- | --- | --- |",
    ]
    for label, (g, o) in (("If chain", rows[True]), ("plain chain", rows[False])):
        ratio = f"{g / o:.2f}" if o else "-"
        lines.append(
            f"| {label} ({args.ifs} steps) | {g:.1f} | {o:.1f} | {ratio} |"
            if o
            else f"| {label} ({args.ifs} steps) | {g:.1f} | - | - |"
        )
    lines.append("")
    lines.append(f"per-If overhead: graphkiln {per_if_gk:.2f} µs")
    if ort_if is not None and ort_plain is not None:
        lines[-1] += f", onnxruntime {(ort_if - ort_plain) / args.ifs:.2f} µs"
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with open(args.record, "a", encoding="utf-8") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
