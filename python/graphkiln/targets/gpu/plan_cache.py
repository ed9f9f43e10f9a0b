# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu executable's plans by key (input shapes, and values of the inputs read as
parameters), safe when several threads run one program at once:

- one lock around every lookup, insertion and eviction;
- a missing plan is built once even when several threads ask for it together: the first
  builds it (outside the lock: a build takes seconds), the others wait for its result (or
  its exception);
- least recently used plans beyond `limit` are dropped, which only drops the cache's
  reference: a thread that got a plan holds it for the length of its run, so a plan another
  thread is running is never freed under it (its device memory goes when the last run ends).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any
from collections.abc import Callable, Hashable


class PlanCache:
    def __init__(self, limit: int):
        self.limit = limit
        self._lock = threading.Lock()
        self._plans: OrderedDict[Hashable, Any] = OrderedDict()
        self._building: dict[Hashable, Future] = {}

    def get(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The plan of `key`, built by `build()` if missing (once, whoever asks)."""
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                return plan
            pending = self._building.get(key)
            if pending is None:
                pending = self._building[key] = Future()
                builder = True
            else:
                builder = False
        if not builder:
            return pending.result()  # the builder's plan, or its exception raised here too
        try:
            plan = build()
        except BaseException as exc:
            with self._lock:
                del self._building[key]
            pending.set_exception(exc)
            raise
        evicted = []
        with self._lock:
            del self._building[key]
            self._plans[key] = plan
            while len(self._plans) > self.limit:
                evicted.append(self._plans.popitem(last=False)[1])
        pending.set_result(plan)
        # dropped outside the lock: freeing a device executor may wait for a graph capture
        del evicted
        return plan

    def keys(self) -> list:
        """The keys of the cached plans (a snapshot), least recently used first."""
        with self._lock:
            return list(self._plans)

    def values(self) -> list:
        """The cached plans (a snapshot), least recently used first."""
        with self._lock:
            return list(self._plans.values())

    def items(self) -> list:
        """(key, plan) of the cached plans (a snapshot), least recently used first."""
        with self._lock:
            return list(self._plans.items())

    def __len__(self) -> int:
        with self._lock:
            return len(self._plans)
