# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Prometheus metrics of the server (text exposition format 0.0.4, written here: no client
library needed), per model: requests and errors (by HTTP status), request latency, queue
time, batch run time and batch sizes as histograms."""

from __future__ import annotations

import bisect
import threading

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class Histogram:
    """Cumulative-bucket histogram of one label set."""

    def __init__(self, buckets):
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)  # the last: above every bucket (+Inf)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        """Count one value."""
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.n += 1


_HELP = {
    "graphkiln_requests_total": ("counter", "inference requests received"),
    "graphkiln_request_errors_total": (
        "counter",
        "inference requests answered with an error, by HTTP status",
    ),
    "graphkiln_request_duration_seconds": (
        "histogram",
        "time from receiving an inference request to its answer",
    ),
    "graphkiln_queue_duration_seconds": (
        "histogram",
        "time a request waited for its batch to start",
    ),
    "graphkiln_batch_duration_seconds": ("histogram", "time one batch took to run"),
    "graphkiln_batch_size": ("histogram", "rows per batch run"),
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """The server's counters and histograms; thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counters: dict[tuple, float] = {}
        self._histograms: dict[tuple, Histogram] = {}

    def _count(self, metric: str, labels: tuple, by: float = 1.0) -> None:
        with self._lock:
            self._counters[(metric, labels)] = self._counters.get((metric, labels), 0.0) + by

    def _observe(self, metric: str, labels: tuple, value: float, buckets) -> None:
        with self._lock:
            h = self._histograms.get((metric, labels))
            if h is None:
                h = self._histograms[(metric, labels)] = Histogram(buckets)
            h.observe(value)

    def observe_request(self, model: str, status: int, seconds: float) -> None:
        """One inference request answered with `status` after `seconds`."""
        labels = (("model", model),)
        self._count("graphkiln_requests_total", labels)
        if status >= 400:
            self._count("graphkiln_request_errors_total", labels + (("code", str(status)),))
        self._observe("graphkiln_request_duration_seconds", labels, seconds, LATENCY_BUCKETS)

    def observe_batch(self, model: str, rows: int, seconds: float, queued: list[float]) -> None:
        """One batch of `rows` run in `seconds`; `queued`: each of its requests' wait."""
        labels = (("model", model),)
        self._observe("graphkiln_batch_size", labels, rows, BATCH_BUCKETS)
        self._observe("graphkiln_batch_duration_seconds", labels, seconds, LATENCY_BUCKETS)
        for q in queued:
            self._observe("graphkiln_queue_duration_seconds", labels, q, LATENCY_BUCKETS)

    def render(self) -> str:
        """Everything in Prometheus text format."""
        with self._lock:
            counters = dict(self._counters)
            histograms = {
                k: (list(h.counts), h.total, h.n, h.buckets) for k, h in self._histograms.items()
            }
        lines = []
        for metric, (kind, text) in _HELP.items():
            lines += [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}"]
            for (name, labels), value in sorted(counters.items()):
                if name == metric:
                    lines.append(f"{metric}{_labels(labels)} {value:g}")
            for (name, labels), (counts, total, n, buckets) in sorted(histograms.items()):
                if name != metric:
                    continue
                running = 0
                for bound, c in zip(list(buckets) + ["+Inf"], counts):
                    running += c
                    le = bound if isinstance(bound, str) else f"{bound:g}"
                    lines.append(f"{metric}_bucket{_labels(labels + (('le', le),))} {running}")
                lines.append(f"{metric}_sum{_labels(labels)} {total:.9g}")
                lines.append(f"{metric}_count{_labels(labels)} {n}")
        return "\n".join(lines) + "\n"


def _labels(labels: tuple) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"
