# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Einsum on the gpu target: the shared decomposition (targets/native/lower_einsum.py)
through the gpu table, every equation of tests/targets/cpu/einsum_cases.py against ref and
numpy.einsum, run by the numpy model of the gpu kernels (plan_emulator.py) and, marked gpu,
on the device; float16 in its own type (Gemm in half with float32 accumulation); the steps
of MaxViT-style attention; what the gpu refuses (int64 sums: no integer Reduce) named with
the equation."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget, lower_plan
from gpu_testing import EmulatedPlan, check, requires_gpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu"))
from cpu_testing import rand  # noqa: E402
from einsum_cases import EQUATIONS, einsum_feeds, einsum_model, numpy_einsum  # noqa: E402


def _check(name, dtype, on_device, tol):
    equation, shapes = EQUATIONS[name]
    feeds = einsum_feeds(shapes, dtype)
    (got,) = check(einsum_model(equation, shapes, dtype), feeds, on_device, rtol=tol, atol=tol)
    want = numpy_einsum(equation, feeds)
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("name", sorted(EQUATIONS))
def test_einsum_emulated(name):
    _check(name, np.float32, False, 1e-5)


@requires_gpu
@pytest.mark.parametrize("name", sorted(EQUATIONS))
def test_einsum_on_device(name):
    _check(name, np.float32, True, 2e-4)


@pytest.mark.parametrize("name", ["batched_matmul", "attention_scores", "trace", "outer"])
def test_einsum_float16_emulated(name):
    _check(name, np.float16, False, 1e-2)


def test_symbolic_batch_emulated_at_two_sizes():
    """One program, a plan per batch size (specialized, then the Einsum decomposed)."""
    equation = "bhid,bhjd->bhij"
    dims = [["batch", 2, 5, 4], ["batch", 2, 6, 4]]
    program = gk.parse_onnx_buffer(einsum_model(equation, None, dims=dims), default_dim=None)
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    executable = GpuExecutable(graph, plan_factory=EmulatedPlan)
    for batch in (1, 3):
        feeds = [rand([batch, 2, n, 4], seed=batch + n) for n in (5, 6)]
        (got,) = executable.run(feeds)
        assert got.shape == (batch, 2, 5, 6)
        np.testing.assert_allclose(got, np.einsum(equation, *feeds), rtol=1e-5, atol=1e-5)


def _plan(name, dtype=np.float32):
    equation, shapes = EQUATIONS[name]
    program = gk.parse_onnx_buffer(einsum_model(equation, shapes, dtype))
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    return lower_plan(graph)


def test_attention_is_batched_gemm_steps():
    scores = _plan("attention_scores")
    assert [s.kernel for s in scores.steps] == ["StridedCopy", "Gemm"]
    gemm = scores.steps[1].attrs
    assert (gemm["batch"], gemm["m"], gemm["n"], gemm["k"]) == (6, 5, 6, 4)
    assert [s.kernel for s in _plan("attention_values").steps] == ["Gemm"]


def _einsum_node(name, dtype):
    equation, shapes = EQUATIONS[name]
    graph = gk.parse_onnx_buffer(einsum_model(equation, shapes, dtype)).graph
    return next(n for n in graph.nodes if n.op == "Einsum")


def test_integer_contraction_is_refused_naming_the_equation():
    from graphkiln.targets.gpu.table import SUPPORT
    from graphkiln.targets.native.lower_einsum import einsum_refusal

    why = einsum_refusal(_einsum_node("matmul", np.int64), SUPPORT)
    assert why is not None
    assert "gpu" in why and "'ij,jk->ik'" in why and "ReduceSum of i64" in why
    with pytest.raises(gk.errors.CompileError, match="Einsum"):
        _plan("matmul", np.int64)
    # without a sum the same dtype runs: a transpose is a copy of any element type
    assert einsum_refusal(_einsum_node("transpose", np.int64), SUPPORT) is None
