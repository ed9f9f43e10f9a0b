# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Scale-out on Ray Serve: a deployment whose replicas each hold the compiled programs and
answer the same Open Inference Protocol as the local server (the same app, codec and
checks), batching with `@serve.batch`. One replica per GPU (`ray_actor_options={"num_gpus":
1}`) for the gpu target, else per `cpus_per_replica` CPU slots; `autoscaling_config` is
passed to Ray as it is. Ray restarts a replica that dies; its requests in flight fail
(the proxy answers 5xx) and are the client's to retry.

Needs `pip install graphkiln[serve-ray]`. The models travel as bytes (read on the driver),
so replicas on other nodes of a cluster need no shared file system."""

from __future__ import annotations

import asyncio
import os

from .app import DEFAULT_MAX_BODY_BYTES, create_app
from .batcher import batch_key, batch_rows, run_batch
from .metrics import Metrics
from .models import ServedModel

APP_NAME = "graphkiln"


def _program_from_bytes(data: bytes, target: str):
    import graphkiln
    from graphkiln.serialize import format_of

    if format_of(data[:64]) is not None:
        prog = graphkiln.load_buffer(data)
        if prog.is_compiled and prog.target.name == target:
            return prog
    else:
        prog = graphkiln.parse_onnx(data)
    return prog.compile(target)


class RayBackend:
    """The backend of one replica: requests go through `serve.batch` (up to `max_batch`
    requests within `max_delay_s`), are grouped by model and shape, and run in a worker
    thread, so the replica's event loop keeps taking requests meanwhile."""

    def __init__(self, models: list[ServedModel], max_batch: int, max_delay_s: float):
        from ray import serve

        self.models = {m.name: m for m in models}
        self.metrics = Metrics()
        self.max_batch = max_batch
        self._batched = serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=max_delay_s)(
            self._run_many
        )

    def start(self) -> None:
        """Nothing to start: Ray runs the replica."""

    def stop(self) -> None:
        """Nothing to stop: Ray drains and stops the replica."""

    def is_ready(self) -> bool:
        """A replica answers once its programs are compiled."""
        return True

    def model_ready(self, name: str) -> bool:
        """Every model of a replica is ready once it answers."""
        return name in self.models

    async def infer(self, model: ServedModel, feeds: dict) -> list:
        """The model's outputs for `feeds`, batched with this replica's other requests."""
        ok, value = await self._batched((model.name, feeds))
        if not ok:
            raise value
        return value

    async def _run_many(self, items: list) -> list:
        import time

        groups: dict[tuple, list[int]] = {}
        for i, (name, feeds) in enumerate(items):
            groups.setdefault((name, batch_key(self.models[name], feeds)), []).append(i)
        results: list = [None] * len(items)
        for (name, _), members in groups.items():
            model = self.models[name]
            chunk, rows = [], 0
            chunks = []
            for i in members:  # at most max_batch rows per run
                r = batch_rows(model, items[i][1])
                if chunk and rows + r > self.max_batch:
                    chunks.append(chunk)
                    chunk, rows = [], 0
                chunk.append(i)
                rows += r
            chunks.append(chunk)
            for chunk in chunks:
                start = time.perf_counter()
                outs = await asyncio.to_thread(run_batch, model, [items[i][1] for i in chunk])
                self.metrics.observe_batch(
                    name,
                    sum(batch_rows(model, items[i][1]) for i in chunk),
                    time.perf_counter() - start,
                    [],
                )
                for i, out in zip(chunk, outs):
                    results[i] = (False, out) if isinstance(out, BaseException) else (True, out)
        return results


class GraphkilnReplica:
    """One replica: compiles the models (given as {name: bytes}) for `target` and serves
    the protocol's app on each HTTP request Ray's proxy sends it."""

    def __init__(
        self,
        models: dict,
        target: str = "cpu",
        max_batch: int = 8,
        max_delay_s: float = 0.002,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ):
        served = [
            ServedModel(name, _program_from_bytes(data, target), platform=f"graphkiln_{target}")
            for name, data in models.items()
        ]
        self.backend = RayBackend(served, max_batch, max_delay_s)
        self.app = create_app(self.backend, max_body_bytes=max_body_bytes, manage_backend=False)

    async def __call__(self, request):
        """Answer one HTTP request (a starlette Request) with the protocol's app."""
        from starlette.responses import Response

        body = await request.body()
        delivered = False

        async def receive():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        answer = {"status": 500, "headers": [], "body": []}

        async def send(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                answer["headers"] = message.get("headers", [])
            elif message["type"] == "http.response.body":
                answer["body"].append(message.get("body", b""))

        scope = dict(request.scope)
        scope["root_path"] = ""
        await self.app(scope, receive, send)
        headers = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in answer["headers"]
            if k.lower() != b"content-length"
        }
        return Response(b"".join(answer["body"]), status_code=answer["status"], headers=headers)


def build_app(
    models: list[tuple[str, str]],
    *,
    target: str = "cpu",
    replicas: int | None = 1,
    max_batch: int = 8,
    max_delay_s: float = 0.002,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    cpus_per_replica: float = 1.0,
    autoscaling_config: dict | None = None,
    max_ongoing_requests: int = 64,
    ray_actor_options: dict | None = None,
):
    """The bound Ray Serve application for `models` ([(name, path)], read here): `replicas`
    copies (ignored with `autoscaling_config`, which Ray takes as it is), each on one GPU
    for target "gpu", else on `cpus_per_replica` CPUs with GRAPHKILN_NUM_THREADS set to
    match unless it is set. `ray_actor_options` adds to (and wins over) those."""
    from ray import serve

    blobs = {}
    for name, path in models:
        with open(path, "rb") as f:
            blobs[name] = f.read()
    if target == "gpu":
        options = {"num_gpus": 1}
    else:
        threads = os.environ.get("GRAPHKILN_NUM_THREADS") or str(max(1, int(cpus_per_replica)))
        options = {
            "num_cpus": cpus_per_replica,
            "runtime_env": {"env_vars": {"GRAPHKILN_NUM_THREADS": threads}},
        }
    options.update(ray_actor_options or {})
    settings = {"ray_actor_options": options, "max_ongoing_requests": max_ongoing_requests}
    if autoscaling_config:
        settings["autoscaling_config"] = dict(autoscaling_config)
    else:
        settings["num_replicas"] = replicas
    deployment = serve.deployment(name="GraphkilnReplica", **settings)(GraphkilnReplica)
    return deployment.bind(blobs, target, max_batch, max_delay_s, max_body_bytes)


def start(
    models: list[tuple[str, str]],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    address: str | None = None,
    **options,
) -> None:
    """Connect to Ray (`address`, e.g. "auto"; None starts a local Ray), start Serve's HTTP
    proxy on host:port and deploy the models (build_app's options); returns once every
    replica is up. Stop with `stop()`."""
    import ray
    from ray import serve

    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    serve.start(http_options={"host": host, "port": port})
    serve.run(build_app(models, **options), name=APP_NAME, route_prefix="/")


def stop() -> None:
    """Delete the graphkiln application and shut Serve down (Ray itself stays up)."""
    from ray import serve

    serve.shutdown()
