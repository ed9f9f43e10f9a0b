# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""int8 CNNs on the cpu: graphkiln against onnxruntime on the same QDQ file, and against
graphkiln's own float32 run of the model it was quantized from.

    PYTHONPATH=/tmp/ortsite python benchmarks/int8_vs_onnxruntime.py \\
        --dir /work/models --models resnet50,resnet18,mobilenet_v2 \\
        --record benchmarks/results/int8_cpu.md

For each NAME.onnx of --dir (float32, as tools/export_real_models.py writes them, with
NAME.npz holding feeds "input:<name>"; without it, one seeded normal image):
  - quantize it with onnxruntime's own quantizer: --mode static (quant_pre_process, then
    quantize_static: QDQ format, u8 activations, per-channel i8 weights, calibrated on the
    feeds, images perturbed by seeded noise) or --mode dynamic (quantize_dynamic, i8
    weights: the usual choice for transformers): what a user of onnxruntime's tools has;
  - compile both files on graphkiln's cpu target (GRAPHKILN_NUM_THREADS = --threads) and
    open onnxruntime sessions on both (intra_op_num_threads = --threads);
  - time the four engines interleaved in blocks (--block timed runs each, after untimed
    runs lasting at least --settle-ms, so the other engine's spinning threads go quiet;
    see cpu_vs_onnxruntime.py), --runs each; report medians;
  - check the int8 outputs: graphkiln's against onnxruntime's on the same QDQ file (the
    largest difference over the largest |value|, and whether the top class agrees).
Ratios: graphkiln int8 / onnxruntime int8 (below 1: graphkiln is faster) and graphkiln
float32 / graphkiln int8 (the speed-up quantization gives graphkiln's users).
onnxruntime is the peer and the quantizer here, never part of graphkiln.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time

import numpy as np


def quantize(source: str, target: str, feeds: dict, mode: str) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType
    from onnxruntime.quantization import quantize_dynamic, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if mode == "dynamic":
        quantize_dynamic(source, target, weight_type=QuantType.QInt8)
        return
    rng = np.random.default_rng(0)

    class Calibration(CalibrationDataReader):
        def __init__(self):
            self.left = 8

        def get_next(self):
            if not self.left:
                return None
            self.left -= 1
            return {
                k: v + rng.standard_normal(v.shape).astype(v.dtype) * 0.1
                if v.dtype.kind == "f"
                else v
                for k, v in feeds.items()
            }

    prepared = target + ".pre.onnx"
    quant_pre_process(source, prepared, skip_symbolic_shape=True)
    quantize_static(
        prepared,
        target,
        Calibration(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
    )
    os.remove(prepared)


def model_feeds(folder: str, name: str, source: str) -> dict:
    """NAME.npz's "input:<name>" arrays, else one seeded normal image of the input's dims."""
    path = os.path.join(folder, f"{name}.npz")
    if os.path.exists(path):
        data = np.load(path)
        return {k[len("input:") :]: data[k] for k in data.files if k.startswith("input:")}
    import graphkiln

    dims = [int(d) for d in graphkiln.parse_onnx(source).graph.inputs[0].type.dims]
    return {input_name(source): np.random.default_rng(1).standard_normal(dims).astype(np.float32)}


def input_name(path: str) -> str:
    import onnx

    model = onnx.load(path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    return next(i.name for i in model.graph.input if i.name not in initializers)


def time_blocks(engines: dict, runs: int, block: int, settle_ms: float) -> dict:
    """{engine: median ms}, the engines' runs interleaved in blocks of `block` timed runs,
    each after `settle_ms` of untimed ones (benchmarks/quantize_cpu.py times with it too)."""
    times = {name: [] for name in engines}
    while any(len(t) < runs for t in times.values()):
        for name, run in engines.items():
            start = time.perf_counter()
            while time.perf_counter() - start < settle_ms / 1e3:
                run()
            for _ in range(min(block, runs - len(times[name]))):
                t = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t)
    return {name: 1e3 * float(np.median(t)) for name, t in times.items()}


def bench(folder: str, name: str, mode: str, threads: int, runs: int, block: int, settle_ms):
    import onnxruntime as ort

    import graphkiln

    source = os.path.join(folder, f"{name}.onnx")
    feeds = model_feeds(folder, name, source)
    float_program = graphkiln.parse_onnx(source).compile("cpu")
    with tempfile.TemporaryDirectory() as tmp:
        qdq = os.path.join(tmp, f"{name}_int8.onnx")
        start = time.perf_counter()
        quantize(source, qdq, feeds, mode)
        quantize_s = time.perf_counter() - start
        int8_program = graphkiln.parse_onnx(qdq).compile("cpu")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        sessions = {
            path: ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            for path in (source, qdq)
        }
    engines = {
        "gk_f32": lambda: float_program.run(feeds),
        "gk_int8": lambda: int8_program.run(feeds),
        "ort_f32": lambda: sessions[source].run(None, feeds),
        "ort_int8": lambda: sessions[qdq].run(None, feeds),
    }
    got = np.asarray(int8_program.run(feeds)[0])
    want = np.asarray(sessions[qdq].run(None, feeds)[0])
    for run in engines.values():
        run()
    medians = time_blocks(engines, runs, block, settle_ms)
    return {
        "model": name,
        **medians,
        "quantize_s": quantize_s,
        "rel_diff": float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30)),
        "top1": bool(np.argmax(got) == np.argmax(want)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="folder of NAME.onnx float32 models")
    parser.add_argument(
        "--models", default="resnet50", help="comma-separated NAMEs (default: resnet50)"
    )
    parser.add_argument(
        "--mode",
        choices=("static", "dynamic"),
        default="static",
        help="onnxruntime's quantize_static (QDQ, default) or quantize_dynamic",
    )
    parser.add_argument("--threads", type=int, default=2, help="threads of both engines")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per engine")
    parser.add_argument("--block", type=int, default=5, help="timed runs per block")
    parser.add_argument("--settle-ms", type=float, default=30.0, help="untimed runs per block")
    parser.add_argument("--record", help="append the table to this markdown file")
    args = parser.parse_args(argv)
    os.environ["GRAPHKILN_NUM_THREADS"] = str(args.threads)
    import onnxruntime as ort

    header = (
        "| model | graphkiln f32 ms | graphkiln int8 ms | onnxruntime f32 ms | "
        "onnxruntime int8 ms | gk int8 / ort int8 | gk f32 / gk int8 | int8 outputs: "
        "max diff / max, top-1 |"
    )
    lines = [header, "|" + " --- |" * 8]
    for name in args.models.split(","):
        r = bench(args.dir, name, args.mode, args.threads, args.runs, args.block, args.settle_ms)
        line = (
            f"| {name} | {r['gk_f32']:.2f} | {r['gk_int8']:.2f} | {r['ort_f32']:.2f} | "
            f"{r['ort_int8']:.2f} | {r['gk_int8'] / r['ort_int8']:.2f} | "
            f"{r['gk_f32'] / r['gk_int8']:.2f} | {r['rel_diff']:.3f}, "
            f"{'same' if r['top1'] else 'DIFFERS'} |"
        )
        lines.append(line)
        print(line if len(lines) > 3 else "\n".join(lines), flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    context = (
        f"{stamp}; {platform.processor() or platform.machine()}, {os.cpu_count()} cpus; "
        f"{args.threads} threads; onnxruntime {ort.__version__}; quantize_{args.mode}; "
        f"medians of {args.runs} runs"
    )
    if args.record:
        command = "PYTHONPATH=/tmp/ortsite python benchmarks/int8_vs_onnxruntime.py " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        with open(args.record, "a") as f:
            f.write(f"\n## {context}\n\n`{command}`\n\n" + "\n".join(lines) + "\n")
    print(context)
    return 0


if __name__ == "__main__":
    sys.exit(main())
