# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The HTTP side: an ASGI app (starlette) speaking the Open Inference Protocol v2 over a
backend (repository.LocalBackend, or the Ray deployment's), and `serve()`, which runs it
on uvicorn.

Endpoints: GET /v2 (server metadata), /v2/health/live, /v2/health/ready,
/v2/models/{name}[/versions/{v}] (metadata), .../ready, .../config, POST .../infer (JSON
tensors and the binary tensor extension), POST /v2/repository/index, GET /metrics
(Prometheus). Every error is {"error": "..."} with a 4xx status for the client's mistakes
(413 for a body over the limit, 404 for unknown models, versions and paths) and 500 for a
request the model fails on; no request's failure affects another's."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

from .codec import (
    ProtocolError,
    decode_inputs,
    encode_response,
    read_body,
    requested_outputs,
    split_binary,
)

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
EXTENSIONS = ["binary_tensor_data", "model_repository", "metrics"]


def _json(payload: dict, status: int = 200):
    from starlette.responses import Response

    return Response(json.dumps(payload).encode(), status_code=status, media_type="application/json")


def _error(status: int, message: str):
    return _json({"error": message}, status)


async def _read_limited(request, limit: int) -> bytes:
    """The raw body, refused (413) as soon as it passes `limit` bytes (whatever the
    Content-Length header claims)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ProtocolError(
            413,
            f"the request body is {declared} bytes; this server accepts "
            f"at most {limit} (--max-body-mb)",
        )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ProtocolError(
                413,
                f"the request body is over {limit} bytes, the most this "
                "server accepts (--max-body-mb)",
            )
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(
    backend,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    server_name: str = "graphkiln",
    manage_backend: bool = True,
):
    """The ASGI app over `backend`. `manage_backend`: start the backend when the app starts
    and stop it (draining queued requests) when the app shuts down."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from ..version import __version__

    def model_of(request):
        name = request.path_params["name"]
        model = backend.models.get(name)
        if model is None:
            raise ProtocolError(
                404, f"unknown model {name!r}; this server has {sorted(backend.models)}"
            )
        version = request.path_params.get("version")
        if version is not None and version != model.version:
            raise ProtocolError(
                404, f"model {name!r} has no version {version!r} (versions: [{model.version!r}])"
            )
        return model

    async def server_metadata(request):
        return _json({"name": server_name, "version": __version__, "extensions": EXTENSIONS})

    async def live(request):
        return _json({"live": True})

    async def ready(request):
        ok = backend.is_ready()
        return _json({"ready": ok}, 200 if ok else 503)

    async def model_metadata(request):
        return _json(model_of(request).metadata())

    async def model_ready(request):
        model = model_of(request)
        ok = backend.model_ready(model.name)
        return _json({"name": model.name, "ready": ok}, 200 if ok else 503)

    async def model_config(request):
        model = model_of(request)
        batching = model.batch_symbol is not None
        cut = 1 if batching else 0

        def dims(spec):
            return spec.metadata()["shape"][cut:]

        return _json(
            {
                "name": model.name,
                "platform": model.platform,
                "backend": "graphkiln",
                "max_batch_size": getattr(backend, "max_batch", 1) if batching else 0,
                "input": [
                    {
                        "name": s.name,
                        "data_type": f"TYPE_{s.datatype}".replace("TYPE_BYTES", "TYPE_STRING"),
                        "dims": dims(s),
                    }
                    for s in model.inputs
                ],
                "output": [
                    {
                        "name": s.name,
                        "data_type": f"TYPE_{s.datatype}".replace("TYPE_BYTES", "TYPE_STRING"),
                        "dims": dims(s),
                    }
                    for s in model.outputs
                ],
            }
        )

    async def repository_index(request):
        return _json(
            [
                {
                    "name": m.name,
                    "version": m.version,
                    "state": "READY" if backend.model_ready(m.name) else "UNAVAILABLE",
                }
                for m in backend.models.values()
            ]
        )

    async def metrics(request):
        return PlainTextResponse(
            backend.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    async def infer(request):
        start = time.perf_counter()
        model = model_of(request)  # unknown names are not counted: their labels are unbounded
        status = 500
        try:
            try:
                raw = await _read_limited(request, max_body_bytes)
            except ClientDisconnect:
                raise ProtocolError(400, "the client went away while sending the body") from None
            body = read_body(raw, request.headers.get("content-encoding"), max_body_bytes)
            req, binary = split_binary(body, request.headers.get("inference-header-content-length"))
            feeds = decode_inputs(req, binary)
            model.check_feeds(feeds)
            wanted = requested_outputs(req, model.output_names)
            try:
                results = await backend.infer(model, feeds)
            except ProtocolError:
                raise
            except Exception as exc:  # noqa: BLE001 - the model failed on this request only
                raise ProtocolError(
                    500, f"model {model.name!r} failed on this request: {type(exc).__name__}: {exc}"
                ) from None
            by_name = dict(zip(model.output_names, results))
            header = {"model_name": model.name, "model_version": model.version}
            if isinstance(req.get("id"), str):
                header["id"] = req["id"]
            content, headers = encode_response(
                header, [(name, by_name[name], binary_out) for name, binary_out in wanted]
            )
            status = 200
            return Response(content, headers=headers)
        except ProtocolError as exc:
            status = exc.status
            return _error(exc.status, exc.message)
        finally:
            backend.metrics.observe_request(model.name, status, time.perf_counter() - start)

    async def on_protocol_error(request, exc):
        return _error(exc.status, exc.message)

    async def on_http_error(request, exc):
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404:
            detail = f"no endpoint {request.url.path!r} (the Open Inference Protocol v2: /v2/...)"
        elif exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path!r}"
        return _error(exc.status_code, detail)

    async def on_crash(request, exc):
        return _error(500, f"internal error: {type(exc).__name__}: {exc}")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        if manage_backend:
            await asyncio.to_thread(backend.start)
        try:
            yield
        finally:
            if manage_backend:
                await asyncio.to_thread(backend.stop)

    model_paths = ["/v2/models/{name}", "/v2/models/{name}/versions/{version}"]
    routes = [
        Route("/v2", server_metadata),
        Route("/v2/health/live", live),
        Route("/v2/health/ready", ready),
        Route("/v2/repository/index", repository_index, methods=["POST", "GET"]),
        Route("/metrics", metrics),
    ]
    for base in model_paths:
        routes += [
            Route(base, model_metadata),
            Route(base + "/ready", model_ready),
            Route(base + "/config", model_config),
            Route(base + "/infer", infer, methods=["POST"]),
        ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            ProtocolError: on_protocol_error,
            HTTPException: on_http_error,
            Exception: on_crash,
        },
    )


def serve(
    backend,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    graceful_timeout_s: float = 30.0,
    log_level: str = "warning",
    on_listening=None,
) -> None:
    """Run the app on uvicorn until SIGINT / SIGTERM; then stop taking connections, finish
    the requests in flight (up to `graceful_timeout_s`), drain the backend and return.
    `on_listening(host, port)` is called once the socket listens (port 0: a free one)."""
    import signal
    import socket
    import threading

    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ValueError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    bound = sock.getsockname()[1]
    app = create_app(backend, max_body_bytes=max_body_bytes)
    config = uvicorn.Config(
        app,
        log_level=log_level,
        timeout_graceful_shutdown=graceful_timeout_s,
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    if on_listening is not None:
        on_listening(host, bound)
    # uvicorn re-raises the signal that stopped it once it has shut down; with these
    # handlers in place that ends the call, not the process (a drained stop exits 0)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {
            sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)
        }
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
