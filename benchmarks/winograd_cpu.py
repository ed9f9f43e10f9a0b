# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's Winograd F(4x4, 3x3) convolutions on cpu (src/cpu/winograd_conv.cpp) against
the same program with them turned off (GRAPHKILN_CPU_WINOGRAD=0: oneDNN's direct kernels)
and against onnxruntime on the same ONNX file and threads.

Models: ResNet-style CNNs of tests/concurrency_models.py (3x3 convolutions with batch norm
folded, residual adds): `serve_cnn` is the CNN of benchmarks/serve_load.py (64x64 images,
widths 32-256), `resnet18_224` a ResNet-18 layout at 224x224 (widths 64-512). Each case runs
the three engines in interleaved blocks (--rounds) and reports medians; outputs are checked
against onnxruntime's.

    PYTHONPATH=/tmp/ortsite python benchmarks/winograd_cpu.py --record \
        benchmarks/results/winograd_cpu.md

onnxruntime from `pip install --target /tmp/ortsite onnxruntime`.
"""

import argparse
import datetime
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the model builders

MODELS = {
    # name: (image size, widths)
    "serve_cnn": (64, (32, 64, 128, 256)),
    "resnet18_224": (224, (64, 128, 256, 512)),
}


def build(name: str, batch: int) -> bytes:
    import concurrency_models as cm

    size, widths = MODELS[name]
    model = cm.resnet_like(seed=0, batch=batch, size=size, widths=widths)
    model.ir_version = 8  # onnxruntime releases that predate newer IR versions load it
    return model.SerializeToString()


def graphkiln_runner(model: bytes, threads: int, winograd: bool, feeds: dict):
    import graphkiln as gk

    saved = {k: os.environ.get(k) for k in ("GRAPHKILN_NUM_THREADS", "GRAPHKILN_CPU_WINOGRAD")}
    os.environ["GRAPHKILN_NUM_THREADS"] = str(threads)
    os.environ["GRAPHKILN_CPU_WINOGRAD"] = "1" if winograd else "0"
    try:  # the kernels read the switch when they are built: compile and run once here
        program = gk.parse_onnx_buffer(model).compile("cpu")
        program.run(feeds)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return lambda: program.run(feeds)[0]


def ort_runner(model: bytes, threads: int, feeds: dict):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    return lambda: session.run(None, feeds)[0]


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def measure(name: str, batch: int, threads: int, runs: int, rounds: int) -> dict:
    size = MODELS[name][0]
    model = build(name, batch)
    feeds = {"x": np.random.default_rng(batch).standard_normal((batch, 3, size, size))}
    feeds["x"] = feeds["x"].astype(np.float32)
    engines = {
        "gk": graphkiln_runner(model, threads, True, feeds),
        "gk_direct": graphkiln_runner(model, threads, False, feeds),
        "ort": ort_runner(model, threads, feeds),
    }
    want = engines["ort"]()
    scale = float(np.abs(want).max())
    diffs = {k: float(np.abs(f() - want).max()) / scale for k, f in engines.items() if k != "ort"}
    times: dict[str, list[float]] = {k: [] for k in engines}
    for _ in range(rounds):
        for k, f in engines.items():
            f()  # settle
            times[k] += timed(f, runs)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"model": name, "batch": batch, "threads": threads, **med, "diffs": diffs}


def table(rows: list[dict]) -> str:
    lines = [
        "| model | batch | threads | graphkiln ms | graphkiln direct ms | onnxruntime ms "
        "| gk / ort | gk direct / ort | direct / winograd | max diff / max vs ort |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['threads']} | {r['gk']:.2f} | "
            f"{r['gk_direct']:.2f} | {r['ort']:.2f} | {r['gk'] / r['ort']:.2f} | "
            f"{r['gk_direct'] / r['ort']:.2f} | {r['gk_direct'] / r['gk']:.2f} | "
            f"{r['diffs']['gk']:.1e} / {r['diffs']['gk_direct']:.1e} |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--cases",
        default="serve_cnn:1,serve_cnn:16,resnet18_224:1,resnet18_224:4",
        help="model:batch pairs, comma-separated (models: " + ", ".join(MODELS) + ")",
    )
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    p.add_argument("--runs", type=int, default=10, help="timed runs per block")
    p.add_argument("--rounds", type=int, default=3, help="interleaved blocks per engine")
    p.add_argument("--record", help="append the table, with the command, to this markdown file")
    args = p.parse_args()
    rows = []
    for threads in [int(t) for t in args.threads.split(",")]:
        for case in args.cases.split(","):
            name, batch = case.split(":")
            if name not in MODELS:
                p.error(f"unknown model {name!r}: one of {', '.join(MODELS)}")
            rows.append(measure(name, int(batch), threads, args.runs, args.rounds))
            r = rows[-1]
            print(
                f"{name} b{batch} t{threads}: gk {r['gk']:.2f} direct {r['gk_direct']:.2f} "
                f"ort {r['ort']:.2f} ms  gk/ort {r['gk'] / r['ort']:.2f}",
                flush=True,
            )
    text = table(rows)
    print(text)
    if args.record:
        import onnxruntime

        head = (
            f"\n## {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
            f"{platform.machine()}, {os.cpu_count()} cpus; onnxruntime {onnxruntime.__version__}; "
            f"medians of {args.rounds} x {args.runs} runs\n\n"
            f"`python benchmarks/winograd_cpu.py {' '.join(sys.argv[1:])}`\n\n"
        )
        with open(args.record, "a") as f:
            f.write(head + text + "\n")


if __name__ == "__main__":
    main()
