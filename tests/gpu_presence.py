# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Whether the gpu target can run in this test session: shared by the tests that run models
on ref, cpu and gpu alike and skip gpu, with the reason, where it cannot."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def gpu_missing() -> str | None:
    """Why the gpu target cannot run here, or None."""
    from graphkiln._native import load_core
    from graphkiln.device import check_gpu_compatibility

    verdict = check_gpu_compatibility()
    if not verdict.ok:
        return f"no usable GPU: {verdict.message.splitlines()[0]}"
    if not hasattr(load_core(), "GpuExecutor"):
        return "graphkiln._core was built without GPU_TARGETS"
    return None
