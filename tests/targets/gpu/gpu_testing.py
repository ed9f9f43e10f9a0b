# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Helpers for the gpu target's tests: run a small ONNX model on `ref` (the oracle) and on
`gpu` (or, without a GPU, on the numpy model of the gpu kernels: plan_emulator.py) and
compare. Tests that need the device carry `requires_gpu`: marked `gpu` and skipped with the
reason where no usable GPU or no GPU build is found."""

from __future__ import annotations


import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget, lower_plan, plan_outputs
from gpu_presence import gpu_missing  # noqa: F401  (re-exported: the gpu tests import it from here)
from plan_emulator import Emulator


def requires_gpu(test):
    reason = gpu_missing()
    return pytest.mark.gpu(pytest.mark.skipif(reason is not None, reason=reason or "")(test))


class EmulatedPlan:
    """A gpu plan run by the numpy model of the kernels instead of the device (GpuPlan's
    arguments; graph replay, tuning and the device number need the device, so they are
    ignored)."""

    def __init__(
        self,
        graph,
        builtin_blas=False,
        graphs=True,
        fast_math=False,
        tune="lookup",
        channels_last=None,
        max_concurrency=1,
        device=-1,
    ):
        self.plan = lower_plan(graph, fast_math, bool(channels_last))
        self.input_dtypes = [v.type.dtype.numpy for v in graph.inputs]
        self.executor = Emulator(self.plan)
        self.bounded, self.num_outputs = plan_outputs(self.plan, graph)


def run_emulated(model: bytes, feeds: dict) -> list[np.ndarray]:
    program = gk.parse_onnx_buffer(model)
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    executable = GpuExecutable(graph, plan_factory=EmulatedPlan)
    return executable.run([feeds[v.name] for v in graph.inputs])


def run_gpu(model: bytes, feeds: dict, **options) -> list[np.ndarray]:
    return gk.parse_onnx_buffer(model).compile("gpu", **options).run(feeds)


def compare(got: list, ref: list, rtol: float, atol: float) -> None:
    assert len(got) == len(ref)
    for r, c in zip(ref, got):
        r, c = np.asarray(r), np.asarray(c)
        assert c.dtype == r.dtype, (c.dtype, r.dtype)
        assert c.shape == r.shape, (c.shape, r.shape)
        if np.issubdtype(r.dtype, np.floating):
            scale = float(np.max(np.abs(r[np.isfinite(r)]))) if np.isfinite(r).any() else 0.0
            np.testing.assert_allclose(c, r, rtol=rtol, atol=atol * max(scale, 1.0))
        else:
            np.testing.assert_array_equal(c, r)


def check(model: bytes, feeds: dict, on_device: bool, rtol=1e-4, atol=1e-5, **options):
    ref = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    got = run_gpu(model, feeds, **options) if on_device else run_emulated(model, feeds)
    compare(got, ref, rtol, atol)
    return got
