# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""1,000 runs of the example model keep memory flat (no per-run leak)."""

import gc
import os

import numpy as np

import graphkiln

EXAMPLE = os.path.join(os.path.dirname(graphkiln.__file__), "models", "example_cnn.onnx")


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def test_thousand_runs_keep_memory_flat():
    prog = graphkiln.parse_onnx(EXAMPLE).compile("ref")
    ((name, t),) = prog.get_parameter_shapes().items()
    x = np.random.default_rng(0).standard_normal(t.dims).astype(np.float32)
    for _ in range(100):  # warm-up: caches, allocator pools
        prog.run({name: x})
    gc.collect()
    objects_before, rss_before = len(gc.get_objects()), _rss_bytes()
    for _ in range(1000):
        prog.run({name: x})
    gc.collect()
    objects_after, rss_after = len(gc.get_objects()), _rss_bytes()
    # a run keeping even one container alive would add 1000 objects
    assert objects_after - objects_before < 200, (objects_before, objects_after)
    if rss_before is not None and rss_after is not None:
        # the input alone is 12 KiB: keeping it (or an output copy) per run would be 12 MB
        assert rss_after - rss_before < 8 << 20, f"RSS grew by {rss_after - rss_before} bytes"
