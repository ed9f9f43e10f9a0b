# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Models quantized by graphkiln's own quantizer (`graphkiln quantize`) on the cpu target:
graphkiln float32 on the float model against graphkiln int8 on the quantized file, and
onnxruntime's int8 on the same file when onnxruntime is importable (the peer, never part of
graphkiln).

    graphkiln quantize /work/models/resnet50.onnx --int8 --calibrate CALIB.npz \\
        -o /tmp/q/resnet50_int8.onnx
    GRAPHKILN_NUM_THREADS=1 PYTHONPATH=/tmp/ortsite python benchmarks/quantize_cpu.py \\
        --dir /work/models --quantized-dir /tmp/q --models resnet50 --threads 1 --runs 20

For each NAME: DIR/NAME.onnx and QUANTIZED_DIR/NAME_int8.onnx (plus
BASELINE_DIR/NAME_int8.onnx, another quantizer's file, when --baseline-dir is given);
the engines timed interleaved in blocks (--block timed runs each after --settle-ms of
untimed ones), medians of --runs; one seeded normal input of the model's input dims.
Printed: the medians, f32 / int8 (the speed-up quantizing gives), gk int8 / ort int8 (below
1: graphkiln is faster), and on --checks other random inputs the int8 outputs against the
float model's (and graphkiln's against onnxruntime's): top-1 agreement and the largest
difference over the largest |value|."""

from __future__ import annotations

import argparse
import functools
import os
import sys

import numpy as np
from int8_vs_onnxruntime import time_blocks  # benchmarks/ is on sys.path when run


def _feed(program, seed: int) -> dict:
    (value,) = program.graph.inputs
    dims = [int(d) for d in value.type.dims]
    x = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return {value.name: x}


def _first_output(program, feeds: dict) -> np.ndarray:
    return program.run(feeds)[0]


def _agreement(got: list, want: list) -> str:
    """'k/n top-1, max diff / max': outputs against others (the float model's), the top
    class of each and the largest difference over the largest |value| of `want`."""
    same = sum(int(np.argmax(g) == np.argmax(w)) for g, w in zip(got, want))
    diff = max(float(np.abs(g - w).max()) / float(np.abs(w).max()) for g, w in zip(got, want))
    return f"{same}/{len(want)} top-1, {diff:.3f}"


def bench(args, name: str) -> dict:
    import graphkiln

    source = os.path.join(args.dir, f"{name}.onnx")
    files = {"gk int8": os.path.join(args.quantized_dir, f"{name}_int8.onnx")}
    if args.baseline_dir:
        files["gk int8 baseline"] = os.path.join(args.baseline_dir, f"{name}_int8.onnx")
    programs = {"gk f32": graphkiln.parse_onnx(source).compile("cpu")}
    for label, path in files.items():
        programs[label] = graphkiln.parse_onnx(path).compile("cpu", int8=True)
    engines = {label: functools.partial(_first_output, p) for label, p in programs.items()}
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(
            files["gk int8"], options, providers=["CPUExecutionProvider"]
        )
        engines["ort int8"] = lambda feeds: session.run(None, feeds)[0]
    feeds = _feed(programs["gk f32"], 1)
    medians = time_blocks(
        {k: functools.partial(run, feeds) for k, run in engines.items()},
        args.runs,
        args.block,
        args.settle_ms,
    )
    checks = [_feed(programs["gk f32"], 100 + i) for i in range(args.checks)]
    outputs = {label: [np.asarray(run(f)) for f in checks] for label, run in engines.items()}
    accuracy = {
        f"{k} vs gk f32": _agreement(v, outputs["gk f32"])
        for k, v in outputs.items()
        if k != "gk f32"
    }
    if "ort int8" in outputs:  # the same quantized file: how far the two int8 engines differ
        accuracy["gk int8 vs ort int8"] = _agreement(outputs["gk int8"], outputs["ort int8"])
    return {"medians": medians, "accuracy": accuracy}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="folder of the float NAME.onnx models")
    parser.add_argument("--quantized-dir", required=True, help="folder of NAME_int8.onnx")
    parser.add_argument("--baseline-dir", help="another quantizer's NAME_int8.onnx files")
    parser.add_argument("--models", default="resnet50", help="comma-separated NAMEs")
    parser.add_argument("--threads", type=int, default=1, help="threads of both engines")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per engine")
    parser.add_argument("--block", type=int, default=5, help="timed runs per block")
    parser.add_argument("--settle-ms", type=float, default=30.0, help="untimed runs per block")
    parser.add_argument("--checks", type=int, default=5, help="random inputs for accuracy")
    args = parser.parse_args(argv)
    os.environ["GRAPHKILN_NUM_THREADS"] = str(args.threads)
    for name in args.models.split(","):
        result = bench(args, name)
        medians = result["medians"]
        f32 = medians["gk f32"]
        print(f"{name}: medians of {args.runs} runs, {args.threads} thread(s)")
        for label, ms in medians.items():
            ratio = "" if label == "gk f32" else f"  (gk f32 / this: {f32 / ms:.2f}x)"
            print(f"  {label:18s} {ms:8.2f} ms{ratio}")
        if "ort int8" in medians:
            print(f"  gk int8 / ort int8: {medians['gk int8'] / medians['ort int8']:.2f}")
        for label, words in result["accuracy"].items():
            print(f"  {label} on {args.checks} random inputs: {words}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
