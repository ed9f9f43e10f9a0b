# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""How many threads the cpu target uses: GRAPHKILN_NUM_THREADS, else the physical cores
this process may run on."""

from __future__ import annotations

import os

from ... import env


def physical_cores() -> int:
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    cores = set()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = package = None
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "processor":
                    cpu = int(value)
                elif key == "physical id":
                    package = value
                elif key == "core id" and (allowed is None or cpu in allowed):
                    cores.add((package, value))
    except OSError:
        pass
    if cores:
        return len(cores)
    return len(allowed) if allowed else (os.cpu_count() or 1)


def num_threads() -> int:
    value = env.get("GRAPHKILN_NUM_THREADS")
    if value is None or value.strip() == "":
        return physical_cores()
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"GRAPHKILN_NUM_THREADS={value!r}: expected a positive integer")
    return n
