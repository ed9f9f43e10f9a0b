# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Process-wide tuning counters, for tests and benchmarks:
benchmarks   candidates measured (one per candidate configuration timed)
tuned        problems tuned (winners stored)
hits         problems found in the database
misses       problems not found (the heuristic choice was kept)"""

from __future__ import annotations

import threading

_NAMES = ("benchmarks", "tuned", "hits", "misses")
_lock = threading.Lock()
_counts = dict.fromkeys(_NAMES, 0)


def count(name: str, n: int = 1) -> None:
    with _lock:
        _counts[name] += n


def counters() -> dict[str, int]:
    """A copy of the counters."""
    with _lock:
        return dict(_counts)


def reset_counters() -> None:
    with _lock:
        for k in _counts:
            _counts[k] = 0
