# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""InstanceNormalization and GroupNormalization on the gpu target (lower_norm.py: one
LayerNormalization step over N * groups rows, then one Pointwise step for the per-channel
scale and bias) in float16 / bfloat16 against ref, and the steps they become; the float32
cases are op_cases.py's (instancenorm_*, groupnorm_*), emulated and on the device."""

from __future__ import annotations

import os
import sys

import ml_dtypes
import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuTarget, lower_plan
from gpu_testing import run_emulated

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu"))
from cpu_testing import node, onnx_model, rand  # noqa: E402


def _model(op, dtype, shape=(2, 6, 4, 5), **attrs) -> bytes:
    c = shape[1]
    return onnx_model(
        [node(op, ["x", "s", "b"], ["y"], **attrs)],
        {"x": shape},
        {"y": shape},
        {"s": rand((c,), 1, dtype=dtype), "b": rand((c,), 2, dtype=dtype)},
        dtypes={"x": dtype, "y": dtype},
    )


CASES = {
    "instance": ("InstanceNormalization", {}),
    "group": ("GroupNormalization", {"num_groups": 2}),
}


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_half_types_emulated(kind, dtype):
    op, attrs = CASES[kind]
    feeds = {"x": rand((2, 6, 4, 5), 3, dtype=dtype, low=-3, high=3)}
    # float32 statistics in both; the normalized value rounded before the affine step here
    tol = 1e-2 if dtype == np.float16 else 4e-2
    model = _model(op, dtype, **attrs)
    (want,) = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    (got,) = run_emulated(model, feeds)
    assert got.dtype == want.dtype and got.shape == want.shape
    got, want = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * float(np.abs(want).max()))
    assert np.abs(want).max() > 1.0  # normalized values: not all near zero


@pytest.mark.parametrize("kind", sorted(CASES))
def test_steps(kind):
    op, attrs = CASES[kind]
    program = gk.parse_onnx_buffer(_model(op, np.float32, **attrs))
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    plan = lower_plan(graph)
    assert [s.kernel for s in plan.steps] == ["LayerNormalization", "Pointwise"]
    groups = attrs.get("num_groups", 6)
    norm = plan.steps[0].attrs
    assert (norm["rows"], norm["len"]) == (2 * groups, (6 // groups) * 20)


def test_groups_not_dividing_channels_are_refused():
    from graphkiln.targets.gpu.table import SUPPORT

    program = gk.parse_onnx_buffer(_model("GroupNormalization", np.float32, num_groups=4))
    norm = next(n for n in program.graph.nodes if n.op == "GroupNormalization")
    assert not SUPPORT.supported(norm)
