# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The models a server holds: loading them (ONNX models or saved programs, compiled for the
server's target) and the local backend the HTTP app runs them on (a DynamicBatcher per
model, its worker threads sharing the model's one compiled program).

A backend is what the app needs from wherever the models run: `models` ({name:
ServedModel}), `metrics`, `is_ready()`, `start()` / `stop()`, and `await infer(model,
feeds) -> list of arrays`. The Ray deployment (`serving/ray.py`) is the other one."""

from __future__ import annotations

import asyncio
import os

from .batcher import DynamicBatcher
from .codec import ProtocolError
from .metrics import Metrics
from .models import ServedModel


def parse_model_spec(spec: str) -> tuple[str, str]:
    """ "NAME=PATH" or "PATH" (named after the file, without its extension) -> (name, path)."""
    name, eq, path = spec.partition("=")
    if not eq:
        path = spec
        name = os.path.splitext(os.path.basename(spec))[0]
    if not name or not path:
        raise ValueError(f"model {spec!r}: expected PATH or NAME=PATH")
    if any(c in name for c in "/?#% ") or name in (".", ".."):
        raise ValueError(
            f"model name {name!r} cannot appear in a URL path (no '/', '?', '#', '%' or spaces)"
        )
    return name, path


def load_program(path, target: str, *, max_concurrency: int | None = None):
    """The program in `path` (an ONNX model or a saved program) compiled for `target`; a
    saved program compiled for `target` is used as it is. `max_concurrency`, where given
    and the target takes it, bounds the runs that execute at once."""
    import graphkiln
    from graphkiln.serialize import is_saved_program

    if not os.path.isfile(path):
        raise ValueError(f"model file {path!r} does not exist")
    if is_saved_program(path):
        prog = graphkiln.load(path)
        if prog.is_compiled and prog.target.name == target and max_concurrency is None:
            return prog
    else:
        prog = graphkiln.parse_onnx(path)
    options = {}
    if max_concurrency is not None and "max_concurrency" in graphkiln.get_target(target).options:
        options["max_concurrency"] = max_concurrency
    return prog.compile(target, **options)


class LocalBackend:
    """Runs the models in this process: one DynamicBatcher per model, `instances` worker
    threads each, batches of up to `max_batch` rows formed within `max_delay_s`."""

    def __init__(
        self,
        models: list[ServedModel],
        *,
        max_batch: int = 8,
        max_delay_s: float = 0.002,
        instances: int = 1,
        drain_timeout_s: float = 30.0,
    ):
        names = [m.name for m in models]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"two models are named {dupes}: give them names with NAME=PATH")
        self.models = {m.name: m for m in models}
        self.metrics = Metrics()
        self.max_batch, self.max_delay_s, self.instances = max_batch, max_delay_s, instances
        self.drain_timeout_s = drain_timeout_s
        self._batchers: dict[str, DynamicBatcher] = {}

    def start(self) -> None:
        """Start each model's worker threads."""
        for name, model in self.models.items():
            if name not in self._batchers:
                self._batchers[name] = DynamicBatcher(
                    model,
                    max_batch=self.max_batch,
                    max_delay_s=self.max_delay_s,
                    instances=self.instances,
                    metrics=self.metrics,
                )

    def stop(self) -> None:
        """Refuse new requests, finish those queued, stop the workers."""
        batchers, self._batchers = self._batchers, {}
        for b in batchers.values():
            b.close(self.drain_timeout_s)

    def is_ready(self) -> bool:
        """Whether every model takes requests."""
        return bool(self._batchers) and set(self._batchers) == set(self.models)

    def model_ready(self, name: str) -> bool:
        """Whether model `name` takes requests."""
        return name in self._batchers

    async def infer(self, model: ServedModel, feeds: dict) -> list:
        """The model's outputs for `feeds`, run in a batch with other requests."""
        batcher = self._batchers.get(model.name)
        if batcher is None:
            raise ProtocolError(503, f"model {model.name!r} is not ready")
        return await asyncio.wrap_future(batcher.submit(feeds))
