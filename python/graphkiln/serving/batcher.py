# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Dynamic batching: requests to one model whose inputs agree in everything but the batch
dim (dim 0, a symbol shared by every input and output) are concatenated, run once and
split back; requests of other shapes form batches of their own.

`run_batch` is the pure part (concatenate, run, split; on a failed batch each request is
run alone, so that a kernel error fails only the request that causes it), shared with the
Ray deployment. `DynamicBatcher` is the local scheduler: one thread forms a batch at a time
(the oldest request first, then matching ones, until `max_batch` rows or `max_delay_s`
after the oldest arrived), `instances` worker threads run batches concurrently on the
model's program (Program.run is thread-safe)."""

from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import Future

import numpy as np

from .codec import ProtocolError
from .models import ServedModel


def batch_key(model: ServedModel, feeds: dict) -> tuple:
    """What two requests must share to be batched: each input's dtype and shape, without
    dim 0 when the model batches."""
    cut = 1 if model.batch_symbol is not None else 0
    return tuple((s.name, feeds[s.name].dtype.str, feeds[s.name].shape[cut:]) for s in model.inputs)


def batch_rows(model: ServedModel, feeds: dict) -> int:
    """The rows a request brings to a batch (its dim 0; 1 for a model that does not batch)."""
    if model.batch_symbol is None:
        return 1
    return int(feeds[model.inputs[0].name].shape[0])


class Request:
    """One inference request waiting for, or in, a batch."""

    __slots__ = ("feeds", "key", "rows", "future", "enqueued", "started")

    def __init__(self, model: ServedModel, feeds: dict):
        self.feeds = feeds
        self.key = batch_key(model, feeds)
        self.rows = batch_rows(model, feeds)
        self.future: Future = Future()
        self.enqueued = time.perf_counter()
        self.started = 0.0


def _run_one(model: ServedModel, feeds: dict) -> list:
    return [np.asarray(x) for x in model.program.run(feeds)]


def run_batch(model: ServedModel, batch: list[dict]) -> list:
    """Run the requests' feeds (dicts that share a batch_key) as one batch; return, per
    request, its outputs (a list of arrays) or the exception that failed it."""
    if len(batch) == 1 or model.batch_symbol is None:
        results = []
        for feeds in batch:
            try:
                results.append(_run_one(model, feeds))
            except Exception as exc:  # noqa: BLE001 - reported to that request only
                results.append(exc)
        return results
    rows = [batch_rows(model, f) for f in batch]
    total = sum(rows)
    try:
        joined = {s.name: np.concatenate([f[s.name] for f in batch], axis=0) for s in model.inputs}
        outputs = _run_one(model, joined)
        if any(o.ndim == 0 or o.shape[0] != total for o in outputs):
            raise ValueError("an output's dim 0 is not the batch")
    except Exception:  # noqa: BLE001 - run each alone: only the request that fails fails
        return [run_batch(model, [feeds])[0] for feeds in batch]
    cuts = np.cumsum(rows)[:-1]
    per_output = [np.split(o, cuts, axis=0) for o in outputs]
    return [[parts[i] for parts in per_output] for i in range(len(batch))]


class DynamicBatcher:
    """The queue and worker threads of one served model. `submit(feeds)` returns a
    concurrent.futures.Future of the outputs; `close()` stops taking requests, runs those
    already queued, then stops the workers."""

    def __init__(
        self,
        model: ServedModel,
        *,
        max_batch: int = 8,
        max_delay_s: float = 0.002,
        instances: int = 1,
        metrics=None,
    ):
        if max_batch < 1 or instances < 1 or max_delay_s < 0:
            raise ValueError("max_batch and instances must be >= 1, max_delay_s >= 0")
        self.model = model
        self.max_batch = max_batch if model.batch_symbol is not None else 1
        self.max_delay_s = max_delay_s
        self.metrics = metrics
        self._queue: collections.deque[Request] = collections.deque()
        self._cond = threading.Condition()
        self._forming = False
        self._closing = False
        self._in_flight = 0
        self._threads = [
            threading.Thread(
                target=self._work, daemon=True, name=f"graphkiln-serve-{model.name}-{i}"
            )
            for i in range(instances)
        ]
        for t in self._threads:
            t.start()

    @property
    def pending(self) -> int:
        """Requests queued or running."""
        with self._cond:
            return len(self._queue) + self._in_flight

    def submit(self, feeds: dict) -> Future:
        """Queue one request (feeds already checked by ServedModel.check_feeds)."""
        request = Request(self.model, feeds)
        with self._cond:
            if self._closing:
                raise ProtocolError(503, "the server is shutting down")
            self._queue.append(request)
            self._cond.notify_all()
        return request.future

    def close(self, timeout: float | None = None) -> None:
        """Stop taking requests; the workers finish the queue, then exit."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout)

    def _take(self) -> list[Request] | None:
        with self._cond:
            while self._forming or not (self._queue or self._closing):
                self._cond.wait()
            if not self._queue:
                return None  # closing, and nothing left to run
            self._forming = True
            first = self._queue.popleft()
            batch, rows = [first], first.rows
            deadline = first.enqueued + self.max_delay_s
            while rows < self.max_batch:
                kept = collections.deque()
                while self._queue:
                    r = self._queue.popleft()
                    if r.key == first.key and rows + r.rows <= self.max_batch:
                        batch.append(r)
                        rows += r.rows
                    else:
                        kept.append(r)
                self._queue = kept
                left = deadline - time.perf_counter()
                if rows >= self.max_batch or left <= 0 or self._closing:
                    break
                self._cond.wait(left)
            self._forming = False
            self._in_flight += len(batch)
            self._cond.notify_all()
            return batch

    def _work(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            start = time.perf_counter()
            for r in batch:
                r.started = start
            try:
                results = run_batch(self.model, [r.feeds for r in batch])
            except BaseException as exc:  # noqa: BLE001 - never lose a request's answer
                results = [exc] * len(batch)
            elapsed = time.perf_counter() - start
            if self.metrics is not None:
                self.metrics.observe_batch(
                    self.model.name,
                    sum(r.rows for r in batch),
                    elapsed,
                    [start - r.enqueued for r in batch],
                )
            for r, result in zip(batch, results):
                if isinstance(result, BaseException):
                    r.future.set_exception(result)
                else:
                    r.future.set_result(result)
            with self._cond:
                self._in_flight -= len(batch)
                self._cond.notify_all()
