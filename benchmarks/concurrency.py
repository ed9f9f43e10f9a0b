# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Throughput of ONE compiled program run from 1, 2, 4, 8 threads at once, against
onnxruntime's one InferenceSession run from the same threads (its Run is thread-safe too).

    PYTHONPATH=python GRAPHKILN_NUM_THREADS=1 python benchmarks/concurrency.py \\
        --target cpu --models resnet_like,bert_like --record benchmarks/results/concurrency_cpu.md
    python benchmarks/concurrency.py --target gpu --models /tmp/resnet50.onnx --threads 1,2,4

Models: resnet_like / bert_like (tests/concurrency_models.py, batch 1, seeded weights),
resnet50_light (the ResNet-50 the onnx package ships for its backend tests, 1x3x224x224) or
an ONNX file (random seeded feeds of its declared shapes; symbolic dims 1). For each thread
count T: T threads start together and each makes --runs runs on its own inputs; throughput
is all runs / wall time; the ratio against T=1 is the scaling. The peer runs the same feeds
from the same threads with intra_op_num_threads = GRAPHKILN_NUM_THREADS (cpu) or on the
CUDA provider (gpu, when onnxruntime-gpu is importable). Before timing, every output of a
concurrent run is compared with the serial output of its input (bit-identical). Then
--memory-runs concurrent runs measure the resident memory (cpu) or device memory in use
(gpu) after a warm-up, half-way and at the end: flat means no growth per run.
onnxruntime is the peer here, never part of graphkiln."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the model builders


def model_and_feeds(name: str):
    """(serialized ONNX model, feeds_of(i) -> dict) for a built-in name or a file."""
    import onnx

    if name in ("resnet_like", "bert_like"):
        import concurrency_models as cm

        if name == "resnet_like":
            return cm.resnet_like(
                seed=0, batch=1, size=64
            ).SerializeToString(), lambda i: cm.resnet_feeds(i, size=64)
        return cm.bert_like(
            seed=0, batch=1, seq=64, hidden=128
        ).SerializeToString(), lambda i: cm.bert_feeds(i, seq=64)
    if name == "resnet50_light":
        name = os.path.join(
            os.path.dirname(onnx.__file__),
            "backend",
            "test",
            "data",
            "light",
            "light_resnet50.onnx",
        )
    model = onnx.load(name)
    init = {t.name for t in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in init:
            continue
        t = vi.type.tensor_type
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        specs.append((vi.name, onnx.helper.tensor_dtype_to_np_dtype(t.elem_type), dims))

    def feeds_of(i):
        rng = np.random.default_rng(i)
        out = {}
        for n, dtype, dims in specs:
            if np.issubdtype(dtype, np.integer):
                out[n] = rng.integers(0, 100, dims).astype(dtype)
            else:
                out[n] = rng.standard_normal(dims).astype(dtype)
        return out

    return model.SerializeToString(), feeds_of


def concurrent_runs(run, feeds_of, threads: int, runs: int) -> tuple[float, dict]:
    """Wall seconds of `threads` threads making `runs` runs each; outputs by (thread, run)."""
    barrier = threading.Barrier(threads + 1)
    outputs: dict = {}
    errors: list = []
    inputs = {(t, r): feeds_of(1000 + t * runs + r) for t in range(threads) for r in range(runs)}

    def work(t):
        barrier.wait()
        try:
            for r in range(runs):
                outputs[t, r] = run(inputs[t, r])
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    wall = time.perf_counter() - start
    if errors:
        raise errors[0]
    return wall, {k: (inputs[k], v) for k, v in outputs.items()}


def memory_now(target: str) -> int:
    """Bytes in use: the process's resident memory (cpu) or the device's memory in use as
    nvidia-smi / rocm-smi report it (gpu; -1 when neither answers)."""
    if target == "gpu":
        import subprocess

        for cmd in (["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],):
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
                return int(out.split()[0]) * 2**20
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                pass
        return -1
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return -1


def ort_session(data: bytes, target: str, threads: int):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    providers = ["CPUExecutionProvider"]
    if target == "gpu":
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            return None
        providers = ["CUDAExecutionProvider"]
    session = ort.InferenceSession(data, opts, providers=providers)
    return lambda feeds: session.run(None, feeds)


def bench_model(name: str, args) -> list[str]:
    import graphkiln

    data, feeds_of = model_and_feeds(name)
    options = {} if args.max_concurrency is None else {"max_concurrency": args.max_concurrency}
    prog = graphkiln.parse_onnx_buffer(data).compile(args.target, **options)
    intra = int(os.environ.get("GRAPHKILN_NUM_THREADS", "0") or 0) or os.cpu_count()
    peer = ort_session(data, args.target, intra)
    counts = [int(t) for t in args.threads.split(",")]
    # correctness first: concurrent outputs equal the serial outputs of the same inputs
    _, outs = concurrent_runs(prog.run, feeds_of, max(counts), 3)
    wrong = sum(
        not all(np.array_equal(a, b) for a, b in zip(got, prog.run(feeds)))
        for feeds, got in outs.values()
    )
    lines = [
        f"### {os.path.basename(name)} on {args.target}",
        f"concurrent outputs bit-identical to serial: {len(outs) - wrong} of {len(outs)}",
        "",
        "| threads | graphkiln runs/s | scaling | onnxruntime runs/s | scaling "
        "| gk/ort throughput |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    base_gk = base_ort = None
    for t in counts:
        for _ in range(args.warmup):
            prog.run(feeds_of(0))
            if peer:
                peer(feeds_of(0))
        gk = t * args.runs / concurrent_runs(prog.run, feeds_of, t, args.runs)[0]
        ort_rate = (
            t * args.runs / concurrent_runs(peer, feeds_of, t, args.runs)[0] if peer else None
        )
        base_gk = base_gk or gk
        base_ort = base_ort or ort_rate
        peer_cells = (
            f"{ort_rate:.1f} | {ort_rate / base_ort:.2f}x | {gk / ort_rate:.2f}"
            if ort_rate
            else "- | - | -"
        )
        lines.append(f"| {t} | {gk:.1f} | {gk / base_gk:.2f}x | {peer_cells} |")
    plan = prog.stats().get("plan", {})
    lines.append("")
    lines.append(
        f"execution contexts created: {plan.get('contexts')} "
        f"(max_concurrency {plan.get('max_concurrency')}), "
        f"{plan.get('context_bytes')} bytes"
    )
    if args.memory_runs:
        t = max(counts)
        per = max(1, args.memory_runs // (2 * t))
        concurrent_runs(prog.run, feeds_of, t, max(1, per // 4))
        before = memory_now(args.target)
        concurrent_runs(prog.run, feeds_of, t, per)
        middle = memory_now(args.target)
        concurrent_runs(prog.run, feeds_of, t, per)
        after = memory_now(args.target)
        what = "device memory in use" if args.target == "gpu" else "resident memory"
        lines.append(
            f"{what} over {2 * per * t} runs from {t} threads: {before / 2**20:.1f} MiB "
            f"after warm-up, {middle / 2**20:.1f} MiB half-way, {after / 2**20:.1f} MiB "
            f"at the end ({(after - before) / 2**20:+.1f} MiB)"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument(
        "--models",
        default="resnet_like,bert_like",
        help="comma-separated: resnet_like, bert_like, resnet50_light or ONNX file paths",
    )
    parser.add_argument("--threads", default="1,2,4,8", help="thread counts (default 1,2,4,8)")
    parser.add_argument("--runs", type=int, default=50, help="timed runs per thread")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=None,
        help="compile(..., max_concurrency=N) (default: the target's)",
    )
    parser.add_argument(
        "--memory-runs",
        type=int,
        default=1000,
        help="concurrent runs of the memory check (0: skip)",
    )
    parser.add_argument("--record", help="append the tables to this Markdown file")
    args = parser.parse_args()
    header = [
        f"## {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{platform.node()}, {os.cpu_count()} cpus, "
        f"GRAPHKILN_NUM_THREADS={os.environ.get('GRAPHKILN_NUM_THREADS', '(default)')}",
        "",
        "command: " + " ".join([os.path.basename(sys.executable)] + sys.argv),
        "",
    ]
    body = []
    for name in args.models.split(","):
        body += bench_model(name.strip(), args) + [""]
    text = "\n".join(header + body)
    print(text)
    if args.record:
        with open(args.record, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
