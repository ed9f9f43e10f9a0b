# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Load on `graphkiln serve`'s server code over loopback: --clients concurrent clients
(keep-alive HTTP/1.1, the binary tensor extension, each sending its next batch-1 request
as soon as the last is answered) for --duration seconds or --max-requests requests,
whichever comes first, after --warmup seconds of the same load (not counted: every batch
size's plan is built then). The timed load is cut into --rounds blocks, the engines
taking turns, so that other work on the machine weighs on both alike. Models: a batch-1
CNN (tests/concurrency_models.resnet_like, 3x64x64, widths 32-256) and a BERT-class
encoder (bert_like: seq 64, hidden 256, 4 heads, 4 layers). Reported per model and
engine: requests, throughput, p50 / p99 latency, the batch-size histogram (from the
server's /metrics), errors and wrong answers (every answer is compared with graphkiln's ref
target on the same input), and graphkiln's throughput over the peer's.

The peer is onnxruntime behind the same server code (serving.app, LocalBackend, the same
batcher settings): a benchmark-only adapter gives its session Program's introspection and
run(). onnxruntime is only ever this peer; graphkiln's product never imports it.

    PYTHONPATH=python:/tmp/ortsite python benchmarks/serve_load.py \\
        --record benchmarks/results/serve_load_cpu.md

With --target gpu both engines run on the GPU: graphkiln's gpu target (float32, TF32 off)
and onnxruntime's CUDA execution provider, --instances runs at once on the one device
(issue 23 asks for 4); tools/gpu_device_run.sh --serve runs it on the lent machine.

The server (one process per engine and model) and the load generator share the machine:
on a 2-core box that is the honest set-up of a single-node deployment, and both engines
pay for it alike."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the model builders

POOL = 16  # distinct inputs per model, each with its reference output


def build_model(name: str) -> bytes:
    import concurrency_models as cm

    if name == "cnn":
        model = cm.resnet_like(seed=0, batch="N", size=64, widths=(32, 64, 128, 256))
    else:
        model = cm.bert_like(seed=0, batch="N", seq=64, hidden=256, heads=4, layers=4, vocab=1000)
    model.ir_version = 8  # onnxruntime releases that predate newer IR versions load it
    return model.SerializeToString()


def make_inputs(name: str, i: int) -> dict:
    rng = np.random.default_rng(1000 + i)
    if name == "cnn":
        return {"x": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}
    mask = np.ones((1, 64), np.int64)
    mask[:, 64 - 1 - i % 32 :] = 0
    return {"input_ids": rng.integers(0, 1000, (1, 64), dtype=np.int64), "attention_mask": mask}


class OrtProgram:
    """onnxruntime's session with Program's introspection (read from graphkiln's import of
    the same model) and run(): the benchmark's peer behind the same server code."""

    def __init__(self, path: str, threads: int, target: str = "cpu"):
        import onnxruntime as ort

        import graphkiln

        self._meta = graphkiln.parse_onnx(path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        provider = "CUDAExecutionProvider" if target == "gpu" else "CPUExecutionProvider"
        if provider not in ort.get_available_providers():
            raise RuntimeError(f"onnxruntime {ort.__version__} has no {provider}")
        # TF32 off on the GPU, as graphkiln's gpu target and gpu_vs_torch.py's peer run
        options = {"device_id": 0, "use_tf32": 0} if target == "gpu" else {}
        self._session = ort.InferenceSession(path, opts, providers=[(provider, options)])
        if self._session.get_providers()[0] != provider:
            raise RuntimeError(
                f"onnxruntime did not take {provider}: {self._session.get_providers()}"
            )
        self.version = ort.__version__

    def get_parameter_names(self):
        return self._meta.get_parameter_names()

    def get_parameter_shapes(self):
        return self._meta.get_parameter_shapes()

    def get_output_names(self):
        return self._meta.get_output_names()

    def get_output_shapes(self):
        return self._meta.get_output_shapes()

    def run(self, feeds: dict) -> list:
        return self._session.run(None, feeds)


def serve_main(args) -> int:
    """The server process: one model, one engine, the product's server code."""
    from graphkiln.serving.app import serve
    from graphkiln.serving.models import ServedModel
    from graphkiln.serving.repository import LocalBackend, load_program

    threads = int(os.environ.get("GRAPHKILN_NUM_THREADS", "1"))
    if args.engine == "graphkiln":
        prog = load_program(args.serve, args.target, max_concurrency=args.instances)
    else:
        prog = OrtProgram(args.serve, threads, args.target)
    backend = LocalBackend(
        [ServedModel("model", prog)],
        max_batch=args.max_batch,
        max_delay_s=args.max_delay_ms / 1e3,
        instances=args.instances,
    )
    serve(
        backend,
        host="127.0.0.1",
        port=0,
        on_listening=lambda h, p: print(f"listening on {p}", flush=True),
    )
    return 0


# -- the load generator ----------------------------------------------------------------------
def request_bytes(feeds: dict, datatypes: dict) -> bytes:
    head = json.dumps(
        {
            "inputs": [
                {
                    "name": n,
                    "datatype": datatypes[n],
                    "shape": list(v.shape),
                    "parameters": {"binary_data_size": v.nbytes},
                }
                for n, v in feeds.items()
            ],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    body = head + b"".join(np.ascontiguousarray(v).tobytes() for v in feeds.values())
    return (
        b"POST /v2/models/model/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/octet-stream\r\n"
        + f"Inference-Header-Content-Length: {len(head)}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


async def read_response(reader) -> tuple[int, dict, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body


def first_output(headers: dict, body: bytes) -> np.ndarray:
    n = int(headers["inference-header-content-length"])
    out = json.loads(body[:n])["outputs"][0]
    size = out["parameters"]["binary_data_size"]
    return np.frombuffer(body[n : n + size], np.float32).reshape(out["shape"])


async def load(
    port: int, requests: list[bytes], refs: list, clients: int, seconds: float, max_requests: int
) -> dict:
    stats = {"latencies": [], "errors": 0, "wrong": 0, "sent": 0}
    deadline = time.perf_counter() + seconds

    async def client(k: int):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        n = k
        try:
            while time.perf_counter() < deadline and stats["sent"] < max_requests:
                stats["sent"] += 1
                i = n % len(requests)
                n += clients
                t = time.perf_counter()
                writer.write(requests[i])
                await writer.drain()
                status, headers, body = await read_response(reader)
                stats["latencies"].append(time.perf_counter() - t)
                if status != 200:
                    stats["errors"] += 1
                    continue
                got, want = first_output(headers, body), refs[i]
                scale = float(np.abs(want).max()) or 1.0
                if got.shape != want.shape or not np.allclose(
                    got, want, rtol=1e-3, atol=1e-4 * scale
                ):
                    stats["wrong"] += 1
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(client(k) for k in range(clients)))
    stats["wall"] = time.perf_counter() - start
    return stats


def scrape(port: int) -> tuple[dict[str, int], float]:
    """The server's batch-size buckets (cumulative) and seconds spent in batch runs."""
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    counts = {}
    for m in re.finditer(r'graphkiln_batch_size_bucket\{model="model",le="([^"]+)"\} (\d+)', text):
        counts[m.group(1)] = int(m.group(2))
    found = re.search(r'graphkiln_batch_duration_seconds_sum\{model="model"\} (\S+)', text)
    return counts, float(found.group(1)) if found else 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def histogram_delta(before: dict, after: dict) -> str:
    """Per bucket 'rows<=le: batches' from two cumulative scrapes (empty buckets left out)."""
    parts, prev = [], 0
    for le, total in after.items():
        n = total - before.get(le, 0) - prev
        prev += n
        if n:
            parts.append(f"<={le}: {n}")
    return ", ".join(parts)


def start_server(args, engine: str, path: str):
    """(process, port) of a server process for `engine` serving `path`."""
    env = dict(os.environ, GRAPHKILN_NUM_THREADS=str(args.threads))
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--serve",
        path,
        "--engine",
        engine,
        "--target",
        args.target,
        "--instances",
        str(args.instances),
        "--max-batch",
        str(args.max_batch),
        "--max-delay-ms",
        str(args.max_delay_ms),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    found = re.search(r"listening on (\d+)", line)
    if not found:
        proc.kill()
        raise RuntimeError(f"the {engine} server did not start: {line!r}")
    return proc, int(found.group(1))


def run_model(args, model: str, engines: list[str], path: str, refs: list, feeds: list) -> list:
    """Every engine's server up at once (idle ones use no CPU: one thread per run, no
    spinning pools); --rounds blocks of duration / rounds seconds of load each, the engines
    taking turns (the first of each round alternating), so that what else the machine runs
    weighs on each engine alike. Results summed over the blocks."""
    datatypes = {n: "FP32" if v.dtype == np.float32 else "INT64" for n, v in feeds[0].items()}
    requests = [request_bytes(f, datatypes) for f in feeds]
    servers = {}
    acc = {
        e: {
            "latencies": [],
            "errors": 0,
            "wrong": 0,
            "wall": 0.0,
            "runs": 0.0,
            "server_cpu": 0.0,
            "client_cpu": 0.0,
            "hist": {},
        }
        for e in engines
    }
    try:
        for engine in engines:
            servers[engine] = start_server(args, engine, path)
        time.sleep(1.0)  # the lifespans start the workers
        for engine in engines:  # every batch size's plan is built here
            asyncio.run(load(servers[engine][1], requests, refs, args.clients, args.warmup, 10**9))
        block = args.duration / args.rounds
        for r in range(args.rounds):
            for engine in engines if r % 2 == 0 else engines[::-1]:
                proc, port = servers[engine]
                a = acc[engine]
                before, runs0 = scrape(port)
                server0, client0 = cpu_seconds(proc.pid), time.process_time()
                left = max(1, args.max_requests // args.rounds)
                stats = asyncio.run(load(port, requests, refs, args.clients, block, left))
                a["server_cpu"] += cpu_seconds(proc.pid) - server0
                a["client_cpu"] += time.process_time() - client0
                after, runs1 = scrape(port)
                a["runs"] += runs1 - runs0
                for k in ("errors", "wrong", "wall"):
                    a[k] += stats[k]
                a["latencies"] += stats["latencies"]
                for le, total in after.items():
                    a["hist"][le] = a["hist"].get(le, 0) + total - before.get(le, 0)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(60)
    out = []
    for engine in engines:
        a = acc[engine]
        lat = np.array(a["latencies"]) * 1e3
        out.append(
            {
                "model": model,
                "engine": engine,
                "requests": len(lat),
                "rps": len(lat) / a["wall"],
                "p50": float(np.percentile(lat, 50)),
                "p99": float(np.percentile(lat, 99)),
                "errors": a["errors"],
                "wrong": a["wrong"],
                "batches": histogram_delta({}, a["hist"]),
                "in_runs": a["runs"] / a["wall"],
                "server_cpu": a["server_cpu"] / a["wall"],
                "client_cpu": a["client_cpu"] / a["wall"],
            }
        )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="cnn,bert", help="cnn, bert or both (default both)")
    p.add_argument(
        "--engines",
        default="graphkiln,onnxruntime",
        help="graphkiln, onnxruntime (the peer) or both (default both)",
    )
    p.add_argument("--clients", type=int, default=64, help="concurrent clients (default 64)")
    p.add_argument("--duration", type=float, default=60.0, help="timed seconds (default 60)")
    p.add_argument(
        "--max-requests",
        type=int,
        default=500_000,
        help="stop the timed load after this many requests (default 500000)",
    )
    p.add_argument("--warmup", type=float, default=5.0, help="untimed seconds first (default 5)")
    p.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="blocks the timed load is cut into, the engines taking turns (default 4)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="GRAPHKILN_NUM_THREADS and onnxruntime's intra_op_num_threads (default 1)",
    )
    p.add_argument(
        "--target",
        choices=("cpu", "gpu"),
        default="cpu",
        help="where both engines run: cpu, or gpu (graphkiln's gpu target against onnxruntime's "
        "CUDA execution provider; default cpu)",
    )
    p.add_argument("--instances", type=int, default=2, help="batches run at once (default 2)")
    p.add_argument(
        "--max-batch", type=int, default=16, help="the server's --max-batch (default 16)"
    )
    p.add_argument(
        "--max-delay-ms", type=float, default=2.0, help="the server's --max-delay-ms (default 2)"
    )
    p.add_argument("--record", metavar="FILE.md", help="write the results as Markdown")
    p.add_argument("--serve", metavar="MODEL.onnx", help=argparse.SUPPRESS)
    p.add_argument("--engine", default="graphkiln", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        return serve_main(args)

    import graphkiln

    results, ort_version = [], "-"
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            path = os.path.join(tmp, f"{model}.onnx")
            with open(path, "wb") as f:
                f.write(build_model(model))
            ref = graphkiln.parse_onnx(path).compile("ref")
            feeds = [make_inputs(model, i) for i in range(POOL)]
            refs = [ref.run(f)[0] for f in feeds]
            engines = args.engines.split(",")
            if "onnxruntime" in engines:
                import onnxruntime

                ort_version = onnxruntime.__version__
            for r in run_model(args, model, engines, path, refs, feeds):
                results.append(r)
                print(
                    f"{model:5} {r['engine']:12} {r['requests']:7d} requests  "
                    f"{r['rps']:8.1f} req/s  "
                    f"p50 {r['p50']:7.2f} ms  p99 {r['p99']:7.2f} ms  errors {r['errors']}  "
                    f"wrong {r['wrong']}  batches: {r['batches']}  in runs {r['in_runs']:.2f}  "
                    f"server cpu {r['server_cpu']:.2f}  client cpu {r['client_cpu']:.2f}",
                    flush=True,
                )
    ratios = {}
    for model in args.models.split(","):
        by = {r["engine"]: r for r in results if r["model"] == model}
        if {"graphkiln", "onnxruntime"} <= set(by):
            ratios[model] = by["graphkiln"]["rps"] / by["onnxruntime"]["rps"]
            print(f"{model}: graphkiln / onnxruntime throughput {ratios[model]:.3f}")
    if args.record:
        write_record(args, results, ratios, ort_version)
    return 1 if any(r["errors"] or r["wrong"] for r in results) else 0


def gpu_name() -> str:
    """The GPU nvidia-smi names, or what it said instead."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout.strip() or out.stderr.strip()
    except OSError as e:
        return f"nvidia-smi: {e}"


def write_record(args, results, ratios, ort_version) -> None:
    import graphkiln

    command = "python benchmarks/serve_load.py " + " ".join(sys.argv[1:])
    lines = [
        f"# serving load on {args.target}: graphkiln vs onnxruntime {ort_version} behind the "
        "same server"
        if "onnxruntime" in args.engines.split(",")
        else f"# serving load on {args.target}: graphkiln behind graphkiln serve's server code",
        "",
        f"- date: {datetime.date.today()}; machine: {platform.machine()}, {os.cpu_count()} "
        f"logical CPUs, shared with other jobs; Python {platform.python_version()}",
        f"- graphkiln {graphkiln.__version__}; server: graphkiln.serving (starlette on uvicorn), "
        f"--instances {args.instances}, --max-batch {args.max_batch}, --max-delay-ms "
        f"{args.max_delay_ms}; "
        + (
            f"{args.threads} thread(s) per run for both engines "
            "(GRAPHKILN_NUM_THREADS / intra_op_num_threads)"
            if args.target == "cpu"
            else "gpu: graphkiln's gpu target (fp32)"
            + (
                " and onnxruntime's CUDA execution provider"
                if "onnxruntime" in args.engines.split(",")
                else ""
            )
            + f"; {gpu_name()}"
        ),
        f"- load: {args.clients} concurrent keep-alive clients in one asyncio process on the same "
        f"machine, batch-1 binary-tensor requests, {args.warmup:g} s untimed, then "
        f"{args.duration:g} s or {args.max_requests} requests per engine, in {args.rounds} "
        "blocks with the engines taking turns (both servers up, the idle one using no CPU); "
        "every answer checked against graphkiln's ref target (rtol 1e-3)",
        f"- command: `{command}`",
        "",
        "| model | engine | requests | req/s | p50 ms | p99 ms | errors | wrong "
        "| batches (rows <= bucket: count) | in runs | server CPU | client CPU |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r['model']} | {r['engine']} | {r['requests']} | {r['rps']:.1f} | "
            f"{r['p50']:.2f} | {r['p99']:.2f} | {r['errors']} | {r['wrong']} | "
            f"{r['batches']} | {r['in_runs']:.2f} | {r['server_cpu']:.2f} | "
            f"{r['client_cpu']:.2f} |"
        )
    lines += [
        "",
        "`in runs`: seconds the server's instances spent in Program.run (or the "
        "session's run) per second of load, summed over instances (at most "
        f"{args.instances}); `server CPU` / `client CPU`: CPU seconds per second of the "
        "server process and of the load generator (the machine has "
        f"{os.cpu_count()}).",
        "",
    ]
    for model, ratio in ratios.items():
        lines.append(f"- {model}: graphkiln / onnxruntime throughput **{ratio:.3f}**")
    lines.append("")
    with open(args.record, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.record}")


if __name__ == "__main__":
    sys.exit(main())
