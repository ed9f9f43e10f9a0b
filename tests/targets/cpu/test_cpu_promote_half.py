# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Half precision the cpu has no kernel for runs in float32 between Casts
(passes/promote_half.py): float16 / bfloat16 MatMul, and Attention's float16 body."""

import ml_dtypes
import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand


def _kernels(program) -> list[str]:
    plans = list(program._executable._plans.values())
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_half_matmul_runs_in_float32(dtype):
    model = onnx_model(
        [node("MatMul", ["a", "b"], ["y"])],
        {"a": (3, 8, 16), "b": (16, 5)},
        {"y": (3, 8, 5)},
        dtypes={"a": dtype, "b": dtype, "y": dtype},
    )
    a, b = rand((3, 8, 16), seed=1).astype(dtype), rand((16, 5), seed=2).astype(dtype)
    (y,) = check_cpu(model, {"a": a, "b": b}, rtol=2e-2, atol=2e-2)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # one rounding to half at the end: within half an ulp-ish of the exact product
    np.testing.assert_allclose(y.astype(np.float64), exact, rtol=1e-2, atol=1e-2)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    program.run({"a": a, "b": b})
    assert "MatMul" in _kernels(program)  # the oneDNN float32 kernel, not a fallback
    assert program._executable.plan_summary()["ref_nodes"] == 0


def test_float32_matmul_is_left_alone():
    model = onnx_model(
        [node("MatMul", ["a", "b"], ["y"])], {"a": (4, 6), "b": (6, 3)}, {"y": (4, 3)}
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    assert [n.op for n in program.graph.nodes if n.op != "Constant"] == ["MatMul"]


def test_half_matmul_with_a_symbolic_batch_promotes_per_plan():
    model = onnx_model(
        [node("MatMul", ["a", "b"], ["y"])],
        {"a": ("N", 4, 8), "b": (8, 2)},
        {"y": ("N", 4, 2)},
        dtypes={"a": np.float16, "b": np.float16, "y": np.float16},
    )
    program = gk.parse_onnx_buffer(model, default_dim=None).compile("cpu")
    oracle = gk.parse_onnx_buffer(model, default_dim=None).compile("ref")
    for n in (1, 3):
        feeds = {
            "a": rand((n, 4, 8), seed=n).astype(np.float16),
            "b": rand((8, 2), seed=9).astype(np.float16),
        }
        np.testing.assert_allclose(
            program.run(feeds)[0].astype(np.float32),
            oracle.run(feeds)[0].astype(np.float32),
            rtol=2e-2,
            atol=2e-2,
        )
    assert program._executable.plan_summary()["ref_nodes"] == 0
