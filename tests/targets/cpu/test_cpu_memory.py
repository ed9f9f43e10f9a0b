# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Running a compiled cpu program many times leaves the process's memory flat: the arena
and the kernels' scratch are allocated once, outputs are the caller's."""

import gc
import os

import numpy as np

import graphkiln as gk
from graphkiln.cli.common import EXAMPLE_MODEL


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_thousand_runs_keep_memory_flat():
    program = gk.parse_onnx(EXAMPLE_MODEL).compile("cpu")
    (param,) = program.get_parameter_names()
    dims = program.get_parameter_shapes()[param].dims
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    first = program.run({param: x})
    for _ in range(100):  # warm up allocator pools
        program.run({param: x})
    gc.collect()
    before = resident_bytes()
    for _ in range(1000):
        out = program.run({param: x})
    gc.collect()
    grown = resident_bytes() - before
    np.testing.assert_array_equal(out[0], first[0])
    assert grown < 1 << 20, f"resident memory grew by {grown} bytes over 1000 runs"
