# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of MatMul, Gemm, Einsum, Det, MatMulInteger,
QLinearMatMul."""

from functools import partial

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
import op_testing

# every output dim of these ops is inferred statically: check the inferred shapes exactly
run_op = partial(op_testing.run_op, exact=True)


@pytest.fixture
def rng():
    return np.random.default_rng(21)


def _loop_matmul(a, b):
    """An independent 2-D product, written as sums over the shared index."""
    out = np.zeros((a.shape[0], b.shape[1]), np.float64)
    for k in range(a.shape[1]):
        out += np.outer(a[:, k].astype(np.float64), b[k].astype(np.float64))
    return out


def test_matmul_batches_broadcast_and_vectors(rng):
    a = rng.standard_normal((2, 1, 3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4, 6)).astype(np.float32)
    got = run_op("MatMul", [a, b])
    assert got.shape == (2, 5, 3, 6)
    np.testing.assert_allclose(got[1, 3], _loop_matmul(a[1, 0], b[3]), rtol=1e-5, atol=1e-6)
    v = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(run_op("MatMul", [v, b]), np.stack([v @ m for m in b]), rtol=1e-5)
    np.testing.assert_allclose(run_op("MatMul", [a, v]), (a * v).sum(-1), rtol=1e-5, atol=1e-6)
    assert run_op("MatMul", [v, v]).shape == ()


def test_matmul_half_and_int(rng):
    a = rng.standard_normal((8, 300)).astype(np.float16)
    b = rng.standard_normal((300, 3)).astype(np.float16)
    got = run_op("MatMul", [a, b])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, _loop_matmul(a, b), rtol=2e-3, atol=2e-2)
    ia = rng.integers(-9, 9, (3, 4)).astype(np.int32)
    ib = rng.integers(-9, 9, (4, 2)).astype(np.int32)
    np.testing.assert_array_equal(run_op("MatMul", [ia, ib]), _loop_matmul(ia, ib))


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm(trans_a, trans_b, rng):
    a = rng.standard_normal((4, 3) if trans_a else (3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4) if trans_b else (4, 5)).astype(np.float32)
    c = rng.standard_normal((5,)).astype(np.float32)
    got = run_op("Gemm", [a, b, c], alpha=0.5, beta=-2.0, transA=trans_a, transB=trans_b)
    plain = _loop_matmul(a.T if trans_a else a, b.T if trans_b else b)
    np.testing.assert_allclose(got, 0.5 * plain - 2.0 * c, rtol=1e-5, atol=1e-6)
    no_bias = run_op("Gemm", [a, b, None], transA=trans_a, transB=trans_b)
    np.testing.assert_allclose(no_bias, plain, rtol=1e-5, atol=1e-6)


def test_einsum_explicit_implicit_and_ellipsis(rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    got = run_op("Einsum", [a, b], equation="bij, bjk -> bik")
    np.testing.assert_allclose(
        got, np.stack([_loop_matmul(a[i], b[i]) for i in range(2)]), rtol=1e-5, atol=1e-6
    )
    # implicit output: letters used once, in order -> "ik" after the ellipsis
    got = run_op("Einsum", [a, b], equation="...ij,...jk")
    assert got.shape == (2, 3, 5)
    sq = rng.standard_normal((3, 3)).astype(np.float64)
    assert run_op("Einsum", [sq], equation="ii").shape == ()
    np.testing.assert_allclose(
        run_op("Einsum", [sq], equation="ii"), sum(sq[i, i] for i in range(3))
    )
    np.testing.assert_array_equal(run_op("Einsum", [sq], equation="ij->ji"), sq.T)


def test_det(rng):
    x = rng.standard_normal((2, 3, 3)).astype(np.float32)

    def det3(m):
        m = m.astype(np.float64)
        return (
            m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1])
            - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
            + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0])
        )

    np.testing.assert_allclose(run_op("Det", [x]), [det3(x[0]), det3(x[1])], rtol=1e-5)


def test_matmul_integer_per_row_and_per_column_zero_points(rng):
    a = rng.integers(0, 255, (3, 4)).astype(np.uint8)
    b = rng.integers(-128, 127, (4, 2)).astype(np.int8)
    a_zero = np.array([1, 100, 255], np.uint8)
    b_zero = np.array([-3, 5], np.int8)
    got = run_op("MatMulInteger", [a, b, a_zero, b_zero])
    centered_a = a.astype(np.int64) - a_zero.astype(np.int64)[:, None]
    centered_b = b.astype(np.int64) - b_zero.astype(np.int64)[None, :]
    np.testing.assert_array_equal(got, _loop_matmul(centered_a, centered_b).astype(np.int32))
    assert run_op("MatMulInteger", [a, b]).dtype == np.int32


def test_qlinear_matmul(rng):
    a = rng.integers(0, 255, (2, 3, 4)).astype(np.uint8)
    b = rng.integers(0, 255, (4, 5)).astype(np.uint8)
    scales = [np.float32(0.02), np.float32(0.03), np.float32(0.5)]
    zeros = [np.uint8(120), np.uint8(130), np.uint8(7)]
    got = run_op(
        "QLinearMatMul",
        [
            a,
            np.array(scales[0]),
            np.array(zeros[0]),
            b,
            np.array(scales[1]),
            np.array(zeros[1]),
            np.array(scales[2]),
            np.array(zeros[2]),
        ],
    )
    real_a = (a.astype(np.float64) - 120) * np.float64(scales[0])
    real_b = (b.astype(np.float64) - 130) * np.float64(scales[1])
    real = np.stack([_loop_matmul(real_a[i], real_b) for i in range(2)])
    want = np.clip(np.round(real / np.float64(scales[2])) + 7, 0, 255).astype(np.uint8)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_inference_with_symbols_and_unknown_rank():
    g = Graph()
    a = g.add_input("a", TensorType(DType.f32, ("B", "M", 8)))
    b = g.add_input("b", TensorType(DType.f32, (1, 8, "N")))
    assert g.add("MatMul", a, b).type == TensorType(DType.f32, ("B", "M", "N"))
    v = g.add_input("v", TensorType(DType.f32, (8,)))
    assert g.add("MatMul", a, v).type == TensorType(DType.f32, ("B", "M"))
    unknown = g.add_input("u", TensorType(DType.f32, None))
    assert g.add("MatMul", a, unknown).type.rank is None
    assert g.add("Gemm", unknown, v).type.rank == 2
    m = g.add_input("m", TensorType(DType.f32, ("K", 6)))
    assert g.add("Gemm", m, m, transA=1).type.dims == (6, 6)
    out = g.add("Einsum", a, b, equation="...ij,...jk->...ik").type
    assert out == TensorType(DType.f32, ("B", "M", "N"))
    assert g.add("Einsum", unknown, equation="...i->...").type.rank is None
    assert g.add("Det", a).type == TensorType(DType.f32, ("B",))


def test_import_gemm_opset_7_and_matmul(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    model = make_model(
        [
            helper.make_node("Gemm", ["a", "w", "c"], ["g"], transB=1, alpha=2.0),
            helper.make_node("MatMul", ["g", "g2"], ["y"]),
        ],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            helper.make_tensor("w", TensorProto.FLOAT, [5, 4], w.ravel()),
            helper.make_tensor("c", TensorProto.FLOAT, [1], [0.25]),
            helper.make_tensor("g2", TensorProto.FLOAT, [5, 2], np.arange(10.0)),
        ],
        opset=7,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
    assert prog.get_output_shapes()[0] == TensorType(DType.f32, ("N", 2))
    (y,) = prog.compile("ref").run({"a": a})
    g = 2.0 * _loop_matmul(a, w.T) + 0.25
    np.testing.assert_allclose(y, _loop_matmul(g, np.arange(10.0).reshape(5, 2)), rtol=1e-5)
