# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""How many threads the cpu target uses: GRAPHKILN_NUM_THREADS, else the physical cores
this process may run on.

A value above the CPUs this process may run on is lowered to that count, with a warning
(once per process): the cpu target's kernels split each step over exactly that many threads
and wait for all of them, so extra threads never run in parallel, they only queue for the
cores, and a run gets slower with every one (the example CNN on 2 cores: 0.1 ms at 2
threads, 2 ms at 16, 150 ms at 1000)."""

from __future__ import annotations

import math
import os
import threading
import time
import warnings

from ... import env

LOADAVG = "/proc/loadavg"


class ThreadCountWarning(RuntimeWarning):
    """GRAPHKILN_NUM_THREADS asks for more threads than this process has CPUs."""


_warned = False
_warned_lock = threading.Lock()


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


def usable_cpus() -> int:
    """The logical CPUs this process may run on (its affinity mask)."""
    if hasattr(os, "sched_getaffinity"):
        allowed = os.sched_getaffinity(0)
        if allowed:
            return len(allowed)
    return os.cpu_count() or 1


def num_threads() -> int:
    """GRAPHKILN_NUM_THREADS (an integer >= 1, at most usable_cpus(): a larger one is lowered
    to it with a ThreadCountWarning, once per process), else physical_cores()."""
    global _warned
    value = env.get("GRAPHKILN_NUM_THREADS")
    if value is None or value.strip() == "":
        return physical_cores()
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"GRAPHKILN_NUM_THREADS={value!r}: expected an integer >= 1 (the "
            "cpu target's threads; unset or empty: the physical cores, "
            f"{physical_cores()} here)"
        )
    cpus = usable_cpus()
    if n <= cpus:
        return n
    with _warned_lock:
        first, _warned = not _warned, True
    if first:
        warnings.warn(
            f"GRAPHKILN_NUM_THREADS={n} is more than the {cpus} CPUs this process "
            f"may run on ({physical_cores()} physical cores); the cpu target uses "
            f"{cpus} threads (threads beyond the cores only wait for them and make "
            f"every run slower; set it to at most {cpus}, or unset it for the "
            "physical cores)",
            ThreadCountWarning,
            stacklevel=2,
        )
    return cpus


class LoadMonitor:
    """Whether other processes keep this machine's cores busy, so that a run on several
    threads would wait for preempted ones.

    The cpu target's kernels split each step statically over their threads and wait for
    all of them (oneDNN's OpenMP regions, our `omp parallel for`). On a machine where other
    work holds the cores, each parallel region waits for a preempted worker, a scheduler
    time slice each: measured on 2 vCPUs beside 2 busy processes, a 0.66 ms model took
    104 ms at 2 threads and 0.83 ms at 1 (benchmarks/results/cpu_vs_onnxruntime.md). A run
    on one thread has no region to wait on.

    Sampled at most every SAMPLE_S seconds: the machine's runnable threads right now
    (/proc/loadavg) less this process's (/proc/self/task: the caller, worker threads still
    spinning after the last run, any other thread pool of the process), smoothed over about
    SMOOTH_S seconds from a start of no other work (two busy processes on 2 CPUs make it
    crowded after 3 samples, 0.6 s; one passing process does not). Crowded: fewer free
    CPUs than the threads a run wants. Off where there is no /proc/loadavg, or with
    GRAPHKILN_ADAPT_THREADS=0."""

    SAMPLE_S = 0.2
    SMOOTH_S = 2.0

    def __init__(self, path: str = LOADAVG, tasks: str = "/proc/self/task"):
        self.path = path
        self.tasks = tasks
        self._lock = threading.Lock()
        self._last = -1.0
        self._others = 0.0  # smoothed runnable threads of other work
        self._cpus = 1  # usable_cpus() as of the last sample

    def _runnable(self) -> int | None:
        try:
            with open(self.path) as f:
                fields = f.read().split()
            return int(fields[3].split("/")[0])
        except (OSError, IndexError, ValueError):
            return None

    def _own_runnable(self) -> int | None:
        """This process's threads that are running or ready to (state R)."""
        try:
            names = os.listdir(self.tasks)
        except OSError:
            return None
        count = 0
        for name in names:
            try:
                with open(os.path.join(self.tasks, name, "stat")) as f:
                    # "pid (comm) state ...": the state follows the last ')'
                    count += f.read().rpartition(")")[2].split()[0] == "R"
            except (OSError, IndexError):
                continue  # a thread that just ended
        return count

    def others(self, threads: int, now: float | None = None) -> float:
        """Smoothed count of runnable threads of other processes (`threads`: this run's,
        assumed all running where this process's own cannot be read)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if self._last >= 0 and now - self._last < self.SAMPLE_S:
                return self._others
            self._cpus = usable_cpus()  # read with the sample, not on every run
            runnable = self._runnable()
            if runnable is None:  # no /proc/loadavg: never crowded (looked at again later)
                self._others, self._last = 0.0, now
                return 0.0
            own = self._own_runnable()
            sample = max(0.0, float(runnable - (threads if own is None else max(own, 1))))
            if self._last < 0:
                # a prior of no other work, the first sample weighted as one period: one
                # look at /proc catches passing processes (a shell, a kernel thread), and a
                # program that took it as it is ran its first seconds on the twin
                first = math.exp(-max(self.SAMPLE_S, 1e-3) / self.SMOOTH_S)
                self._others = (1.0 - first) * sample
            else:
                keep = math.exp(-(now - self._last) / self.SMOOTH_S)
                self._others = keep * self._others + (1.0 - keep) * sample
            self._last = now
            return self._others

    def crowded(self, threads: int) -> bool:
        """Whether a run on `threads` threads (> 1) would find fewer free CPUs."""
        if threads <= 1 or env.get("GRAPHKILN_ADAPT_THREADS") == "0":
            return False
        others = self.others(threads)  # samples (and reads the CPUs) at most every SAMPLE_S
        return self._cpus - others < threads - 0.5


LOAD = LoadMonitor()
