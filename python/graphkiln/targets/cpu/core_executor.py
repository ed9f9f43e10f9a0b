# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Builds the C++ core's Executor for a plan segment: every plan of a program gets the
program's bound of execution contexts and takes its runs' arenas from the program's arena
pool (new_arena_pool(): plans of other shapes reuse the memory earlier runs touched), and
the process-wide core budget (how many cores concurrent runs may hold at once) is set to the
physical cores before the first one."""

from __future__ import annotations

import threading

from .threads import physical_cores

_budget_lock = threading.Lock()
_budget_set = False


def new_arena_pool():
    """An arena pool for the plans of one program (the C++ core's ArenaPool)."""
    from ..._native import load_core

    return load_core().ArenaPool()


def build_executor(
    steps,
    constants,
    arena_bytes: int,
    input_specs,
    output_specs,
    threads: int,
    max_contexts: int,
    arena_pool=None,
    build_behind: bool = False,
):
    """build_behind: the C++ core may finish building the heavy kernels (oneDNN
    primitives) on a spare core while the first run goes on; for plans made by a run,
    where a build error surfaces in that same call either way."""
    from ..._native import load_core

    global _budget_set
    core = load_core()
    with _budget_lock:
        if not _budget_set:
            core.set_core_budget(physical_cores())
            _budget_set = True
    return core.Executor(
        steps,
        constants,
        arena_bytes,
        input_specs,
        output_specs,
        threads,
        max_contexts,
        arena_pool,
        build_behind,
    )
