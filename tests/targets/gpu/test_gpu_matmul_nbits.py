# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""MatMulNBits (com.microsoft weight-only int4 / int8) on the gpu target: its own kernel
(src/gpu/matmul_nbits.hip, weights kept packed and dequantized in registers), no host step.
Against ref: the one-node cases of tests/frontends/microsoft_nbits_models.py (their
onnxruntime outputs are checked in tests/frontends/test_microsoft_ops.py) on the numpy model
of the gpu kernels, and on the device those and larger ones (a batch-1 GEMV of a 4096 x 4096
int4 weight, batches past the kernel's row tile, K not a multiple of 8, and batches of 48 rows
and more, which dequantize into the workspace and take the GEMM, in one or two slices of W)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu import table
from graphkiln.targets.gpu.host_steps import host_ops
from graphkiln.targets.gpu.target import GpuTarget, lower_plan
from gpu_testing import compare, requires_gpu, run_emulated, run_gpu

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "frontends"))
from microsoft_nbits_models import FORMS, _model, nbits_cases  # noqa: E402

LARGER = {  # name -> (A shape, N, bits, block_size, zero points, bias)
    "gemv_4bit_4096": ((1, 4096), 4096, 4, 128, "none", False),
    "gemv_4bit_zp_bias": ((1, 1, 2048), 1536, 4, 32, "packed", True),
    "batch_7_4bit_float_zp": ((7, 512), 300, 4, 64, "float", False),
    "batch_9_8bit_zp": ((3, 3, 256), 129, 8, 16, "packed", True),
    "odd_k_4bit": ((2, 45), 33, 4, 16, "packed", False),
    "odd_k_8bit": ((5, 1001), 70, 8, 256, "none", True),
    # from 48 rows of A on: dequantized into the workspace, then the BLAS GEMM
    "prefill_4bit_zp_bias": ((64, 512), 300, 4, 32, "packed", True),
    "prefill_8bit_float_zp": ((2, 32, 264), 130, 8, 64, "float", False),
    "prefill_4bit_odd_k": ((48, 45), 33, 4, 16, "none", False),
    "prefill_4bit_two_slices": ((48, 4096), 5000, 4, 128, "none", True),  # W past 64 MiB
}


def _cases(forms: dict) -> dict:
    rng = np.random.default_rng(20261205)
    return {name: _model(name, rng, *form) for name, form in forms.items()}


def _ref(model, feeds):
    return gk.parse_onnx_buffer(model.SerializeToString()).compile("ref").run(feeds)


def test_matmul_nbits_is_a_gpu_kernel_not_a_host_step():
    assert "MatMulNBits" not in host_ops(table.LOWERINGS)
    model, _ = nbits_cases()["matmul_nbits_4bit"]
    program = gk.parse_onnx_buffer(model.SerializeToString())
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    assert [s.kernel for s in lower_plan(graph).steps] == ["MatMulNBits"]


@pytest.mark.parametrize("name", sorted(FORMS))
def test_emulated_gpu_matches_ref(name):
    model, feeds = nbits_cases()[name]
    got = run_emulated(model.SerializeToString(), feeds)
    compare(got, _ref(model, feeds), rtol=1e-5, atol=1e-6)


@requires_gpu
@pytest.mark.parametrize("name", sorted(FORMS) + sorted(LARGER))
def test_device_matches_ref(name):
    model, feeds = {**nbits_cases(), **_cases(LARGER)}[name]
    got = run_gpu(model.SerializeToString(), feeds)
    # float32 sums in another order than ref's float64 ones
    compare(got, _ref(model, feeds), rtol=1e-4, atol=1e-5)
