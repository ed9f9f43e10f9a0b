# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln serve MODEL [MODEL...]`: an Open Inference Protocol v2 server (KServe /
Triton's HTTP protocol) with dynamic batching, on this machine or on Ray Serve."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from .common import add_target_arg, resolve_target


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _positive(text: str) -> float:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def setup_serve(p):
    p.add_argument(
        "models",
        nargs="+",
        metavar="MODEL",
        help="ONNX model or saved program (.gkp) to serve, as PATH (served under "
        "the file's name without its extension) or NAME=PATH",
    )
    add_target_arg(p)
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=8000,
        help="TCP port (default 8000; 0 picks a free one, printed on start)",
    )
    p.add_argument(
        "--max-batch",
        type=_positive_int,
        default=8,
        metavar="N",
        help="most rows (dim 0) one batch concatenates from requests whose other "
        "dims agree (default 8; 1 disables batching). Models whose inputs and "
        "outputs do not share a symbolic dim 0 run each request alone",
    )
    p.add_argument(
        "--max-delay-ms",
        type=_non_negative,
        default=2.0,
        metavar="MS",
        help="how long the oldest queued request waits for others to join its batch (default 2)",
    )
    p.add_argument(
        "--instances",
        type=_positive_int,
        default=1,
        metavar="N",
        help="batches of one model that run at once (worker threads over the "
        "model's compiled program; default 1). With --target cpu, set "
        "GRAPHKILN_NUM_THREADS to about cores / N",
    )
    p.add_argument(
        "--max-body-mb",
        type=_positive,
        default=64.0,
        metavar="MB",
        help="largest request body accepted, in MiB (default 64; compressed bodies "
        "count as inflated); larger ones get 413",
    )
    p.add_argument(
        "--graceful-timeout-s",
        type=_non_negative,
        default=30.0,
        metavar="S",
        help="on SIGINT / SIGTERM, how long requests in flight may take to finish (default 30)",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default warning)",
    )
    ray = p.add_argument_group("Ray Serve (pip install graphkiln[serve-ray])")
    ray.add_argument(
        "--ray",
        action="store_true",
        help="serve on Ray Serve instead: replicas of the models behind Ray's "
        "HTTP proxy on --host / --port, batched with @serve.batch "
        "(--max-batch, --max-delay-ms)",
    )
    ray.add_argument(
        "--replicas",
        type=_positive_int,
        default=1,
        metavar="N",
        help="--ray: replicas (default 1); each takes one GPU with --target gpu, "
        "else --cpus-per-replica CPUs",
    )
    ray.add_argument(
        "--cpus-per-replica",
        type=_positive,
        default=1.0,
        metavar="N",
        help="--ray, cpu / ref targets: CPUs Ray reserves per replica (default 1; "
        "also its GRAPHKILN_NUM_THREADS unless that is set)",
    )
    ray.add_argument(
        "--autoscaling",
        type=_json_object,
        default=None,
        metavar="JSON",
        help="--ray: Ray Serve's autoscaling_config, passed as it is (replaces "
        '--replicas), e.g. \'{"min_replicas": 1, "max_replicas": 4}\'',
    )
    ray.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDRESS",
        help="--ray: the cluster to join (e.g. auto, or ray://head:10001); "
        "default: start a local Ray",
    )


def _needs(module: str, extra: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise SystemExit(f"graphkiln serve: needs {module}: pip install 'graphkiln[{extra}]'")


def _check_ray_options(args) -> None:
    if args.ray:
        return
    given = [
        flag
        for flag, value, default in (
            ("--replicas", args.replicas, 1),
            ("--cpus-per-replica", args.cpus_per_replica, 1.0),
            ("--autoscaling", args.autoscaling, None),
            ("--ray-address", args.ray_address, None),
        )
        if value != default
    ]
    if given:
        raise SystemExit(f"graphkiln serve: {', '.join(given)} apply with --ray only")


def cmd_serve(args) -> int:
    from ..serving.repository import parse_model_spec

    _check_ray_options(args)
    try:
        specs = [parse_model_spec(m) for m in args.models]
    except ValueError as exc:
        raise SystemExit(f"graphkiln serve: {exc}") from None
    names = [n for n, _ in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SystemExit(f"graphkiln serve: two models are named {dupes}; name them with NAME=PATH")
    target = resolve_target(args)
    _needs("starlette", "serve")
    _needs("uvicorn", "serve")
    if args.ray:
        return _serve_ray(args, specs, target)
    return _serve_local(args, specs, target)


def _serve_local(args, specs, target) -> int:
    from ..serving.app import serve
    from ..serving.models import ServedModel
    from ..serving.repository import LocalBackend, load_program

    models = []
    for name, path in specs:
        prog = load_program(path, target, max_concurrency=args.instances)
        models.append(ServedModel(name, prog, platform=f"graphkiln_{target}"))
        symbol = models[-1].batch_symbol
        print(
            f"graphkiln serve: {name} <- {path} ({target}, "
            f"{f'batched along {symbol!r}' if symbol else 'not batched'})",
            flush=True,
        )
    backend = LocalBackend(
        models,
        max_batch=args.max_batch,
        max_delay_s=args.max_delay_ms / 1e3,
        instances=args.instances,
        drain_timeout_s=args.graceful_timeout_s,
    )

    def listening(host, port):
        print(
            f"graphkiln serve: listening on http://{host}:{port} (Open Inference Protocol "
            f"v2: /v2/models/{{name}}/infer, /metrics)",
            flush=True,
        )

    serve(
        backend,
        host=args.host,
        port=args.port,
        max_body_bytes=int(args.max_body_mb * 2**20),
        graceful_timeout_s=args.graceful_timeout_s,
        log_level=args.log_level,
        on_listening=listening,
    )
    print("graphkiln serve: stopped", flush=True)
    return 0


def _serve_ray(args, specs, target) -> int:
    _needs("ray", "serve-ray")
    from ..serving import ray as ray_serving

    if args.port == 0:
        raise SystemExit("graphkiln serve: --ray needs a fixed --port (Ray's proxy listens there)")
    ray_serving.start(
        specs,
        host=args.host,
        port=args.port,
        address=args.ray_address,
        target=target,
        replicas=args.replicas,
        max_batch=args.max_batch,
        max_delay_s=args.max_delay_ms / 1e3,
        max_body_bytes=int(args.max_body_mb * 2**20),
        cpus_per_replica=args.cpus_per_replica,
        autoscaling_config=args.autoscaling,
    )
    print(
        f"graphkiln serve: {len(specs)} model(s) on Ray Serve, listening on "
        f"http://{args.host}:{args.port}; Ctrl-C stops",
        flush=True,
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    ray_serving.stop()
    print("graphkiln serve: stopped", file=sys.stderr, flush=True)
    return 0
