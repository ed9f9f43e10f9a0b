# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Einsum on the cpu target (targets/native/lower_einsum.py: the equation as Transpose /
Reshape / Gather / ReduceSum / Mul / MatMul nodes at lowering): every equation of
einsum_cases.py in float32, float64 and int64 (no MatMul kernel: Mul + ReduceSum) and in
float16 / bfloat16 (computed in float32 between Casts), against ref and numpy.einsum; the
steps a few equations become; a symbolic batch dim compiled once and run at two sizes."""

from __future__ import annotations

import io
import re

import ml_dtypes
import numpy as np
import pytest

import graphkiln as gk
from cpu_testing import check_cpu, node, onnx_model, rand
from einsum_cases import EQUATIONS, einsum_feeds, einsum_model, numpy_einsum


def _check(name, dtype, rtol, atol):
    equation, shapes = EQUATIONS[name]
    feeds = einsum_feeds(shapes, dtype)
    (got,) = check_cpu(einsum_model(equation, shapes, dtype), feeds, rtol=rtol, atol=atol)
    want = numpy_einsum(equation, feeds)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        scale = max(1.0, float(np.abs(want).max(initial=0.0)))
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize("name", sorted(EQUATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64], ids=["f32", "f64", "i64"])
def test_einsum_matches_ref_and_numpy(name, dtype):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    _check(name, dtype, tol, tol)


@pytest.mark.parametrize(
    "name", ["batched_matmul", "attention_scores", "trace", "three_operands", "transpose"]
)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_einsum_half_types(name, dtype):
    # one rounding of the float32 result, as ref: within half an ulp of the type
    _check(name, dtype, 1e-2, 1e-2)


def _kernels(prog) -> list[str]:
    text = io.StringIO()
    prog.print_plan(file=text)
    return re.findall(r"^\s+\d+ (\w+)\s", text.getvalue(), flags=re.M)


def _compiled(name, dtype=np.float32):
    equation, shapes = EQUATIONS[name]
    return gk.parse_onnx_buffer(einsum_model(equation, shapes, dtype)).compile("cpu")


def test_attention_scores_are_one_batched_matmul():
    # bhid,bhjd->bhij: K transposed to [b, h, d, j] once, one MatMul straight into the output
    assert _kernels(_compiled("attention_scores")) == ["CopyRegions", "MatMul"]
    assert _kernels(_compiled("attention_values")) == ["MatMul"]


def test_diagonal_is_one_gather():
    assert _kernels(_compiled("batch_diagonal")) == ["Gather"]
    assert _kernels(_compiled("trace")) == ["Gather", "Reduce"]


def test_float64_contracts_by_mul_and_reduce():
    # the cpu MatMul kernel is float32 only
    assert _kernels(_compiled("matmul", np.float64)) == ["Pointwise", "Reduce"]


def test_symbolic_batch_compiled_once_runs_two_sizes():
    """MaxViT-style attention on a batch the model leaves open: scores, softmax, values."""
    nodes = [
        node("Einsum", ["q", "k"], ["s"], equation="bhid,bhjd->bhij"),
        node("Softmax", ["s"], ["p"], axis=-1),
        node("Einsum", ["p", "v"], ["y"], equation="bhij,bhjd->bhid"),
    ]
    dims = {"q": ["batch", 2, 7, 4], "k": ["batch", 2, 6, 4], "v": ["batch", 2, 6, 4]}
    model = onnx_model(nodes, dims, {"y": ["batch", 2, 7, 4]})
    prog = gk.parse_onnx_buffer(model).compile("cpu")
    ref = gk.parse_onnx_buffer(model).compile("ref")
    for batch in (1, 3):
        feeds = {
            n: rand([batch] + d[1:], seed=batch * 10 + i) for i, (n, d) in enumerate(dims.items())
        }
        (got,) = prog.run(feeds)
        (want,) = ref.run(feeds)
        assert got.shape == (batch, 2, 7, 4)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        scores = np.einsum("bhid,bhjd->bhij", feeds["q"], feeds["k"])
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        expected = np.einsum("bhij,bhjd->bhid", p, feeds["v"])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert len(prog._executable._plans) == 2


def test_unsupported_dtype_is_refused_with_the_equation():
    """A bool Einsum has no Mul / ReduceSum kernel path: compile refuses it (no fallback)."""
    equation, shapes = EQUATIONS["matmul"]
    model = einsum_model(equation, shapes, np.bool_)
    with pytest.raises(gk.errors.CompileError, match="Einsum"):
        gk.parse_onnx_buffer(model).compile("cpu")
    from graphkiln.targets.cpu.table import SUPPORT
    from graphkiln.targets.native.lower_einsum import einsum_refusal

    graph = gk.parse_onnx_buffer(model).graph
    einsum = next(n for n in graph.nodes if n.op == "Einsum")
    why = einsum_refusal(einsum, SUPPORT)
    assert why is not None and "'ij,jk->ik'" in why and "'y'" in why
