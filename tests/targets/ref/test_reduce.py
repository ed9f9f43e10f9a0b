# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of Reduce*, ArgMax/ArgMin, CumSum/CumProd, TopK."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import i64, run_op


@pytest.fixture
def x():
    return np.random.default_rng(11).uniform(0.5, 2.0, (3, 4, 5)).astype(np.float32)


def _expected(op, x, axes, keep):
    x64 = x.astype(np.float64)
    plain = {
        "ReduceSum": lambda: np.sum(x64, axis=axes, keepdims=keep),
        "ReduceMean": lambda: np.mean(x64, axis=axes, keepdims=keep),
        "ReduceMax": lambda: np.amax(x64, axis=axes, keepdims=keep),
        "ReduceMin": lambda: np.amin(x64, axis=axes, keepdims=keep),
        "ReduceProd": lambda: np.prod(x64, axis=axes, keepdims=keep),
        "ReduceL1": lambda: np.sum(np.abs(x64), axis=axes, keepdims=keep),
        "ReduceL2": lambda: np.sqrt(np.sum(x64**2, axis=axes, keepdims=keep)),
        "ReduceLogSum": lambda: np.log(np.sum(x64, axis=axes, keepdims=keep)),
        "ReduceLogSumExp": lambda: np.log(np.sum(np.exp(x64), axis=axes, keepdims=keep)),
        "ReduceSumSquare": lambda: np.sum(x64**2, axis=axes, keepdims=keep),
    }
    return plain[op]()


@pytest.mark.parametrize(
    "op",
    [
        "ReduceSum",
        "ReduceMean",
        "ReduceMax",
        "ReduceMin",
        "ReduceProd",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceSumSquare",
    ],
)
def test_reductions_match_numpy(op, x):
    signed = x - 1.2  # L1 / max / min see negative values too
    data = x if op in ("ReduceLogSum", "ReduceProd") else signed
    for axes, keep in (((0, 2), 1), ((-1,), 0), ((), 1)):
        got = run_op(op, [data, i64(*axes)], consts=[1], keepdims=keep)
        want = _expected(op, data, axes or None, bool(keep))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # no axes input: every axis
    np.testing.assert_allclose(
        run_op(op, [data], keepdims=0), _expected(op, data, None, False), rtol=1e-5, atol=1e-6
    )


def test_noop_with_empty_axes_still_applies_the_elementwise_part(x):
    np.testing.assert_allclose(run_op("ReduceSumSquare", [x], noop_with_empty_axes=1), x * x)
    np.testing.assert_allclose(
        run_op("ReduceLogSum", [x, i64()], consts=[1], noop_with_empty_axes=1), np.log(x), rtol=1e-6
    )
    np.testing.assert_array_equal(run_op("ReduceMax", [x], noop_with_empty_axes=1), x)


def test_empty_reductions_give_the_identity():
    empty = np.zeros((2, 0, 3), np.float32)
    axes = i64(1)
    identities = {
        "ReduceSum": 0.0,
        "ReduceProd": 1.0,
        "ReduceMax": -np.inf,
        "ReduceMin": np.inf,
        "ReduceL2": 0.0,
        "ReduceLogSum": -np.inf,
        "ReduceLogSumExp": -np.inf,
        "ReduceSumSquare": 0.0,
    }
    for op, identity in identities.items():
        got = run_op(op, [empty, axes], consts=[1], keepdims=0)
        np.testing.assert_array_equal(got, np.full((2, 3), identity, np.float32), err_msg=op)
    ints = np.zeros((0, 4), np.int32)
    assert (run_op("ReduceMax", [ints, i64(0)], consts=[1]) == np.iinfo(np.int32).min).all()


def test_integer_and_half_reductions_keep_their_dtype():
    ints = np.random.default_rng(3).integers(-50, 50, (4, 6)).astype(np.int32)
    got = run_op("ReduceSum", [ints, i64(1)], consts=[1], keepdims=0)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ints.sum(axis=1))
    halves = np.random.default_rng(4).uniform(0, 1, (2, 2000)).astype(np.float16)
    got = run_op("ReduceSum", [halves, i64(1)], consts=[1])
    assert got.dtype == np.float16
    # accumulated wide, rounded once: within one half ulp of the exact sum
    np.testing.assert_allclose(got[:, 0], halves.astype(np.float64).sum(axis=1), rtol=1e-3)


def test_arg_reductions_pick_first_or_last_tie():
    data = np.array([[1, 5, 5, 0], [7, 2, 7, 7]], dtype=np.float32)
    np.testing.assert_array_equal(run_op("ArgMax", [data], axis=1), [[1], [0]])
    np.testing.assert_array_equal(
        run_op("ArgMax", [data], axis=1, keepdims=0, select_last_index=1), [2, 3]
    )
    np.testing.assert_array_equal(run_op("ArgMin", [data], axis=0, keepdims=0), [0, 1, 0, 0])
    np.testing.assert_array_equal(
        run_op("ArgMin", [data], axis=-1, select_last_index=1), [[3], [1]]
    )


def _cumulative(x, axis, exclusive, reverse, combine, identity):
    out = np.empty_like(x)
    n = x.shape[axis]
    for i in range(n):
        span = range(i + 1, n) if reverse else range(i)
        if not exclusive:
            span = list(span) + [i]
        total = np.full(np.take(x, 0, axis=axis).shape, identity, x.dtype)
        for j in span:
            total = combine(total, np.take(x, j, axis=axis))
        index = [slice(None)] * x.ndim
        index[axis] = i
        out[tuple(index)] = total
    return out


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_and_cumprod(exclusive, reverse, x):
    ints = np.random.default_rng(5).integers(-9, 9, (3, 4)).astype(np.int64)
    got = run_op("CumSum", [ints, i64(1)], exclusive=exclusive, reverse=reverse)
    np.testing.assert_array_equal(got, _cumulative(ints, 1, exclusive, reverse, np.add, 0))
    got = run_op("CumProd", [x, np.array(-2, np.int32)], exclusive=exclusive, reverse=reverse)
    np.testing.assert_allclose(
        got, _cumulative(x, 1, exclusive, reverse, np.multiply, 1), rtol=1e-6
    )


def test_topk_is_stable_on_ties():
    data = np.array([[3, 1, 3, 2, 1, 3]], dtype=np.float32)
    values, indices = run_op("TopK", [data, i64(4)], consts=[1], num_outputs=2)
    np.testing.assert_array_equal(indices, [[0, 2, 5, 3]])
    np.testing.assert_array_equal(values, [[3, 3, 3, 2]])
    values, indices = run_op("TopK", [data, i64(3)], consts=[1], num_outputs=2, largest=0)
    np.testing.assert_array_equal(indices, [[1, 4, 3]])
    big = np.random.default_rng(6).permutation(40).reshape(5, 8).astype(np.int32)
    values, indices = run_op("TopK", [big, i64(2)], num_outputs=2, axis=0)
    order = np.argsort(-big, axis=0)[:2]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(big, order, axis=0))


def test_inference_with_symbols_unknown_rank_and_runtime_axes():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f16, ("N", 4, 5)))
    axes = g.constant(i64(-1))
    assert g.add("ReduceMean", x, axes, keepdims=0).type == TensorType(DType.f16, ("N", 4))
    assert g.add("ReduceMax", x).type.dims == (1, 1, 1)
    runtime_axes = g.add_input("axes", TensorType(DType.i64, (1,)))
    kept = g.add("ReduceSum", x, runtime_axes).type
    assert kept.rank == 3 and kept.dtype is DType.f16
    assert g.add("ReduceSum", x, runtime_axes, keepdims=0).type.rank is None
    unknown = g.add_input("u", TensorType(DType.f32, None))
    assert g.add("ArgMax", unknown).type == TensorType(DType.i64, None)
    assert g.add("ArgMin", x, axis=1, keepdims=0).type == TensorType(DType.i64, ("N", 5))
    values, indices = g.add_node("TopK", [x, g.constant(i64(3))], {"axis": 1}, 2).outputs
    assert values.type == TensorType(DType.f16, ("N", 3, 5))
    assert indices.type == TensorType(DType.i64, ("N", 3, 5))


def test_import_moves_old_attributes_to_inputs(x):
    model = make_model(
        [
            helper.make_node("ReduceMean", ["x"], ["m"], axes=[0, 2], keepdims=0),
            helper.make_node("TopK", ["x"], ["v", "i"], k=2, axis=1),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
        [
            helper.make_tensor_value_info("m", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None),
        ],
        opset=9,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    assert [n.op for n in prog.graph.nodes if n.op != "Constant"] == ["ReduceMean", "TopK"]
    assert prog.get_output_shapes()[0] == TensorType(DType.f32, (4,))
    mean, values, indices = prog.compile("ref").run({"x": x})
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2)), rtol=1e-6)
    order = np.argsort(-x, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=1))
