# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's cpu target against onnxruntime's CPU provider, same models, same threads.

    PYTHONPATH=python python benchmarks/cpu_vs_onnxruntime.py --dir /work/models \\
        --record benchmarks/results/cpu_vs_onnxruntime.md

The models are NAME.onnx + NAME.npz (feeds `input:<name>`, onnxruntime's outputs
`output:<name>`) made by tools/export_real_models.py (it needs torch; see
benchmarks/README.md for its own environment). For each model:
  - compile on graphkiln's cpu target (GRAPHKILN_NUM_THREADS = --threads) and open an
    onnxruntime session (intra_op_num_threads = --threads, one inter-op thread, default
    graph optimizations), both on the same file;
  - check graphkiln's outputs against onnxruntime's (allclose rtol 1e-4, atol 1e-4*max);
  - warm both up, then time --runs runs of each, interleaved in blocks: --block timed runs
    of graphkiln, then --block of onnxruntime, and so on, each block after --settle untimed
    runs. Blocks rather than strict alternation: after a run, both engines' idle worker
    threads keep spinning for a while (onnxruntime's pool and GNU OpenMP both do) and would
    steal the cores of the other engine's next run (measured here: graphkiln's resnet50
    takes twice as long right after an onnxruntime run); pausing between runs instead lets
    the threads fall asleep, and on this VM waking them costs more than the small models
    take. Before each block the script waits until the process is quiet (the other
    engine's spinning threads asleep: measured on the 2-vCPU VM, onnxruntime's pool spins
    about 45 ms of CPU after a run at 2 threads, GNU OpenMP about 10 ms; a spinner that
    shares the cores with the next runs spins longer still), then the settle runs wake
    this engine's own threads; the blocks still share the machine's state over time.
    Report the medians and the ratio graphkiln / onnxruntime (below 1: graphkiln is
    faster). The geometric mean of the ratios closes the table.
onnxruntime is the peer here, never part of graphkiln.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import time

import numpy as np

DEFAULT_MODELS = [
    # the project's first set
    "resnet50",
    "resnet50_b8",
    "mobilenet_v3_small",
    "efficientnet_b0",
    "densenet121",
    "convnext_tiny",
    "vit_b_16",
    "bert",
    "gpt2",
    # more torchvision CNNs and a windowed-attention transformer
    "resnet18",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "mnasnet1_0",
    "shufflenet_v2_x1_0",
    "squeezenet1_1",
    "regnet_y_400mf",
    "googlenet",
    "swin_t",
    # transformers: a real sentence encoder, relative-position attention, audio
    "all_minilm_l6_v2",
    "distilbert",
    "t5_encoder",
    "wav2vec2",
    # the architectures tools/export_more_architectures.py builds
    "byte_classifier",
    "crnn_ocr",
    "mobile_ocr",
    "kws_tcn",
]


def load_case(folder: str, name: str):
    data = np.load(os.path.join(folder, f"{name}.npz"))
    feeds = {k[len("input:") :]: data[k] for k in data.files if k.startswith("input:")}
    expected = [data[k] for k in data.files if k.startswith("output:")]
    return os.path.join(folder, f"{name}.onnx"), feeds, expected


def max_error(got, expected) -> tuple[bool, float]:
    worst, ok = 0.0, True
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        scale = float(np.max(np.abs(e))) if e.size else 0.0
        ok &= g.shape == e.shape and bool(np.allclose(g, e, rtol=1e-4, atol=1e-4 * scale))
        if e.size:
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - e)) / max(scale, 1e-30)))
    return ok, worst


def _memory_kib() -> dict:
    """VmRSS (resident now) and VmHWM (peak resident since the last reset) in KiB."""
    found = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
    return found


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:  # "5" resets VmHWM to VmRSS
        f.write("5")


def probe_memory(engine: str, folder: str, name: str, threads: int, runs: int = 5) -> dict:
    """Memory of one engine on one model, in this (fresh) process, in MiB over the process
    after imports and the feeds: `program` is what stays resident after compile (or session
    creation); `run` the peak over `runs` runs."""
    import onnxruntime as ort

    import graphkiln

    path, feeds, _ = load_case(folder, name)
    base = _memory_kib()["VmRSS"]
    if engine == "graphkiln":
        program = graphkiln.parse_onnx(path).compile("cpu")

        def run():
            return program.run(feeds)
    else:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

        def run():
            return session.run(None, feeds)

    resident = _memory_kib()["VmRSS"]
    _reset_peak()
    for _ in range(runs):
        run()
    peak = _memory_kib()["VmHWM"]
    return {"program_mib": (resident - base) / 1024, "run_mib": (peak - base) / 1024}


def memory_in_child(engine: str, folder: str, name: str, threads: int) -> dict | None:
    """probe_memory in a fresh interpreter, so that neither engine sees the other's pages."""
    import json
    import subprocess

    command = [sys.executable, os.path.abspath(__file__), "--probe-memory", engine]
    command += ["--dir", folder, "--models", name, "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        print(f"    memory probe of {engine} on {name} failed: {done.stderr[-300:]}", flush=True)
        return None
    return json.loads(lines[-1])


QUIET_SLICE_S = 0.005  # the process is quiet once it uses under QUIET_SHARE of a slice
QUIET_SHARE = 0.1
QUIET_MAX_S = 1.0


def wait_until_quiet() -> float:
    """Sleep until this process's threads (both engines' pools) use under QUIET_SHARE of a
    CPU over QUIET_SLICE_S, at most QUIET_MAX_S; the seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < QUIET_MAX_S:
        cpu = time.process_time()
        time.sleep(QUIET_SLICE_S)
        if time.process_time() - cpu < QUIET_SHARE * QUIET_SLICE_S:
            break
    return time.perf_counter() - start


def bench_model(folder, name, threads, runs, warmup, block, settle, settle_ms):
    """Medians of both engines on one model at `threads` (graphkiln reads
    GRAPHKILN_NUM_THREADS at compile)."""
    import onnxruntime as ort

    import graphkiln

    path, feeds, expected = load_case(folder, name)
    start = time.perf_counter()
    program = graphkiln.parse_onnx(path).compile("cpu")
    compile_s = time.perf_counter() - start
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    ok, err = max_error(program.run(feeds), expected)
    for _ in range(warmup):
        program.run(feeds)
        session.run(None, feeds)
    gk_times, ort_times = [], []
    engines = [
        (lambda: program.run(feeds), gk_times),
        (lambda: session.run(None, feeds), ort_times),
    ]
    while len(gk_times) < runs:
        for run, times in engines:
            wait_until_quiet()  # the other engine's threads asleep
            start = time.perf_counter()
            done = 0
            while done < settle or time.perf_counter() - start < settle_ms / 1e3:
                run()
                done += 1
            for _ in range(min(block, runs - len(times))):
                t = time.perf_counter()
                run()
                times.append(time.perf_counter() - t)
    gk_ms, ort_ms = 1e3 * float(np.median(gk_times)), 1e3 * float(np.median(ort_times))
    return {
        "model": name,
        "graphkiln_ms": gk_ms,
        "onnxruntime_ms": ort_ms,
        "ratio": gk_ms / ort_ms,
        "match": ok,
        "max_rel_err": err,
        "compile_s": compile_s,
        # whether some runs went to the one-thread twin (the machine was crowded)
        "twin": getattr(program._executable, "_narrow", None) is not None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dir",
        default=os.environ.get("GRAPHKILN_MODELS", "models"),
        help="folder with NAME.onnx and NAME.npz (default: $GRAPHKILN_MODELS or models)",
    )
    parser.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help="comma-separated model names (default: %(default)s)",
    )
    parser.add_argument(
        "--threads",
        default=None,
        help="threads for both, or a comma-separated list (e.g. 1,2: a table each; default: "
        "graphkiln's default, the physical cores)",
    )
    parser.add_argument("--runs", type=int, default=20, help="timed runs each (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs each (default 3)")
    parser.add_argument(
        "--block", type=int, default=5, help="timed runs of one engine before switching (default 5)"
    )
    parser.add_argument(
        "--settle", type=int, default=2, help="untimed runs at the start of each block (default 2)"
    )
    parser.add_argument(
        "--settle-ms",
        type=float,
        default=30.0,
        help="and at least this long of them (default 30: onnxruntime's pool spins on after a "
        "run; 2 runs of a 3 ms model left graphkiln's next runs competing with it)",
    )
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        help="run this many busy processes (a spinning loop each) beside both engines: the "
        "machine shared with other work (default 0)",
    )
    parser.add_argument("--record", help="also write the table (markdown) to this file")
    parser.add_argument(
        "--no-memory",
        action="store_true",
        help="skip the memory columns (each is measured in a fresh process per engine)",
    )
    parser.add_argument(
        "--probe-memory", choices=["graphkiln", "onnxruntime"], help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.probe_memory:
        os.environ["GRAPHKILN_NUM_THREADS"] = str(args.threads)
        import json

        print(json.dumps(probe_memory(args.probe_memory, args.dir, args.models, int(args.threads))))
        return 0
    if args.threads is None:
        from graphkiln.targets.cpu.threads import physical_cores

        thread_counts = [physical_cores()]
    else:
        thread_counts = [int(t) for t in str(args.threads).split(",") if t]
    import onnxruntime as ort

    import graphkiln

    lines = [
        f"# graphkiln cpu vs onnxruntime {ort.__version__} (CPU provider)",
        "",
        f"- date: {datetime.date.today()}; machine: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} logical CPUs",
        f"- graphkiln {graphkiln.__version__}; median of {args.runs} timed runs each after "
        f"{args.warmup} warm-up runs, interleaved in blocks of {args.block} (each after the "
        f"process went quiet, the other engine's threads asleep, then {args.settle} untimed "
        f"runs, and at least {args.settle_ms:g} ms of them)",
        "- memory (MiB, each engine in a fresh process, over the process after imports and "
        "feeds): what stays resident after compile / session creation, and the peak over "
        "5 runs",
        f"- command: `{' '.join(['python', *sys.argv])}`",
    ]
    if args.busy:
        lines.append(f"- {args.busy} busy process(es) spinning beside both engines throughout")
    for line in lines:
        print(line, flush=True)
    failures = 0
    busy = start_busy(args.busy)
    try:
        for threads in thread_counts:
            table, failed = bench_threads(args, threads)
            lines += table
            failures += failed
    finally:
        for process in busy:
            process.kill()
    if args.record:
        with open(args.record, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if failures else 0


def start_busy(count: int) -> list:
    """`count` processes that spin until killed (load from other work on the machine)."""
    import subprocess

    spin = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]


def bench_threads(args, threads: int) -> tuple[list[str], int]:
    """One table: every model at `threads` threads for both engines."""
    os.environ["GRAPHKILN_NUM_THREADS"] = str(threads)

    lines = [
        "",
        f"## {threads} thread{'s' if threads > 1 else ''} for both",
        "",
        "| model | graphkiln ms | onnxruntime ms | ratio gk/ort | matches ort "
        "| max err / max|out| | compile s | gk MiB program / run | ort MiB session / run |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for line in lines:
        print(line, flush=True)
    ratios, names_ok, failures = [], [], 0
    # every model timed first, then the memory probes: a probe's child processes keep both
    # cores busy, and timings taken right after them met graphkiln's load monitor still
    # counting them (its runs went to the one-thread twin)
    timed = []
    for name in [m for m in args.models.split(",") if m]:
        try:
            r = bench_model(
                args.dir,
                name,
                threads,
                args.runs,
                args.warmup,
                args.block,
                args.settle,
                args.settle_ms,
            )
        except Exception as exc:  # noqa: BLE001 - report and go on with the next model
            failures += 1
            timed.append((name, f"failed: {type(exc).__name__}: {str(exc)[:200]}"))
            print(f"    {name}: {timed[-1][1]}", flush=True)
            continue
        timed.append((name, r))
        print(
            f"    {name}: graphkiln {r['graphkiln_ms']:.2f} ms, onnxruntime "
            f"{r['onnxruntime_ms']:.2f} ms",
            flush=True,
        )
    for name, r in timed:
        if isinstance(r, str):
            line = f"| {name} | {r} | | | | | | | |"
        else:
            ratios.append(r["ratio"])
            names_ok.append(name)
            failures += not r["match"]
            memory = ["", ""]
            if not args.no_memory:
                for i, engine in enumerate(("graphkiln", "onnxruntime")):
                    m = memory_in_child(engine, args.dir, name, threads)
                    memory[i] = f"{m['program_mib']:.0f} / {m['run_mib']:.0f}" if m else "failed"
            shown = f"{name} (1-thread twin ran)" if r.get("twin") else name
            line = (
                f"| {shown} | {r['graphkiln_ms']:.2f} | {r['onnxruntime_ms']:.2f} | "
                f"{r['ratio']:.3f} | {'yes' if r['match'] else 'NO'} | {r['max_rel_err']:.1e} | "
                f"{r['compile_s']:.2f} | {memory[0]} | {memory[1]} |"
            )
        lines.append(line)
        print(line, flush=True)
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        summary = [
            "",
            f"geomean ratio graphkiln / onnxruntime at {threads} thread(s): {geomean:.3f} over "
            f"{len(ratios)} models; worst: {max(ratios):.3f}; above 1.15: "
            + (", ".join(n for n, r in zip(names_ok, ratios) if r > 1.15) or "none"),
        ]
        lines += summary
        for line in summary:
            print(line, flush=True)
    return lines, failures


if __name__ == "__main__":
    sys.exit(main())
