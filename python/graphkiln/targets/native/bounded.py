# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Outputs whose dims the run decides (NonMaxSuppression's rows, Unique / Compress /
NonZero's lengths): the kernel writes them into a slot of their bound
(LoweringContext.bounded_output) and the plan's runner cuts what it returns (the cpu's
segments, the gpu's plans). src/cpu/nms.cpp, unique.cpp, select.cpp write them; on the gpu
they run as host steps (targets/gpu/host_steps.py)."""

from __future__ import annotations

import numpy as np

from .kernel_contracts import HOST_STEP_PREFIX
from .plan import OUTPUT

# kernels that write an output of run-time length into a buffer of their bound, the rows
# after their result set to -1 (src/cpu/nms.cpp; LoweringContext.bounded_output)
BOUNDED_KERNELS = frozenset({"NonMaxSuppression"})
# kernels whose last output is their result's length (an i64[1] hidden segment output:
# LoweringContext.run_count), the other outputs cut to it along their step's `cut_axes`
# (one per output, -1: not cut; src/cpu/unique.cpp, select.cpp)
COUNTED_KERNELS = frozenset({"Unique", "Compress", "NonZero"})


def bounded_outputs(steps: list[dict]) -> list:
    """How the segment outputs a bounded kernel writes are cut: the index of each one a
    BOUNDED_KERNELS step writes (bounded_rows), and (index, axis, count index) for each
    one a COUNTED_KERNELS step writes (its length along `axis` in output `count index`)."""
    found: set = set()
    for step in steps:
        kernel = step["kernel"].removeprefix(HOST_STEP_PREFIX)  # a gpu host step's too
        if kernel in BOUNDED_KERNELS:
            for out in step["outputs"]:
                kind, index, _ = out["ref"]
                if kind == OUTPUT:
                    found.add(int(index))
        elif kernel in COUNTED_KERNELS:
            count_kind, count_index, _ = step["outputs"][-1]["ref"]
            if count_kind != OUTPUT:  # an exact slot (a constant Compress condition)
                continue
            for out, axis in zip(step["outputs"][:-1], step["attrs"]["cut_axes"]):
                kind, index, _ = out["ref"]
                if kind == OUTPUT and axis >= 0:
                    found.add((int(index), int(axis), int(count_index)))
    return sorted(found, key=lambda e: e if isinstance(e, tuple) else (e,))


def bounded_rows(array: np.ndarray) -> np.ndarray:
    """A bounded output cut at its first row whose first element is negative (the kernel
    fills the rows after its result with -1: src/cpu/nms.cpp)."""
    if array.ndim == 0 or array.shape[0] == 0:
        return array
    stop = array.reshape(array.shape[0], -1)[:, 0] < 0
    return array[: int(np.argmax(stop))].copy() if stop.any() else array


def cut_bounded(arrays: list, bounded: list) -> list:
    """The executor's outputs with the bounded ones cut (bounded_outputs' entries)."""
    if not bounded:
        return arrays
    arrays = list(arrays)
    for entry in bounded:
        if isinstance(entry, tuple):
            i, axis, count = entry
            keep = (slice(None),) * axis + (slice(0, int(arrays[count][0])),)
            arrays[i] = arrays[i][keep].copy()  # C-contiguous, owning its data
        else:
            arrays[entry] = bounded_rows(arrays[entry])
    return arrays
