# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of the indexing ops."""

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import build_graph, i64, run_op


@pytest.fixture
def x():
    return np.random.default_rng(5).standard_normal((3, 4, 5)).astype(np.float32)


@pytest.mark.parametrize(
    "starts,ends,axes,steps",
    [
        ((1, 0), (3, 10**9), (0, 2), (1, 2)),
        ((-1,), (-(10**9),), (1,), (-1,)),
        ((10, -2), (-10, 1), (2, 0), (-3, -1)),
        ((0,), (0,), (1,), (1,)),
    ],
)
def test_slice_matches_python_slicing(x, starts, ends, axes, steps):
    y = run_op("Slice", [x, i64(*starts), i64(*ends), i64(*axes), i64(*steps)], consts=[1, 2, 3, 4])
    index = [slice(None)] * 3
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)  # python clamps the same way ONNX does
    np.testing.assert_array_equal(y, x[tuple(index)])
    g, _ = build_graph(
        "Slice", [x, i64(*starts), i64(*ends), i64(*axes), i64(*steps)], consts=[1, 2, 3, 4]
    )
    assert g.outputs[0].type.dims == x[tuple(index)].shape


def test_slice_keeps_symbolic_dim_when_whole():
    g = Graph()
    v = g.add_input("x", TensorType(DType.f32, ("N", 8)))
    s = g.add("Slice", v, g.constant(i64(0, 2)), g.constant(i64(2**62, 6)), g.constant(i64(0, 1)))
    assert s.type.dims == ("N", 4)


def test_gather_family(x):
    idx = np.array([[0, -1], [2, 1]], np.int32)
    y = run_op("Gather", [x, idx], axis=1)
    assert y.shape == (3, 2, 2, 5)
    for i, j in itertools.product(range(2), range(2)):
        np.testing.assert_array_equal(y[:, i, j], x[:, idx[i, j] % 4])
    ie = np.random.default_rng(1).integers(-5, 5, (3, 4, 2))
    ge = run_op("GatherElements", [x, ie], axis=2)
    for i, j, k in itertools.product(range(3), range(4), range(2)):
        assert ge[i, j, k] == x[i, j, ie[i, j, k] % 5]
    nd = np.array([[[1, 2]], [[3, -1]], [[0, 0]]], np.int64)  # batch_dims=1: per first dim
    g = run_op("GatherND", [x, nd], batch_dims=1)
    assert g.shape == (3, 1)
    for b in range(3):
        assert g[b, 0] == x[b, nd[b, 0, 0], nd[b, 0, 1]]
    np.testing.assert_array_equal(run_op("GatherND", [x, i64(2, 1).reshape(1, 2)]), x[2:3, 1])


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements_and_nd(reduction):
    rng = np.random.default_rng(2)
    data = rng.integers(-9, 9, (4, 3)).astype(np.int32)
    idx = np.array([[1, 0, 3], [1, 2, -1]])
    upd = rng.integers(-9, 9, idx.shape).astype(np.int32)
    if reduction == "none":
        idx = np.array([[1, 0, 3], [2, 3, -4]])
    ops = {
        "none": lambda a, b: b,
        "add": lambda a, b: a + b,
        "mul": lambda a, b: a * b,
        "max": max,
        "min": min,
    }[reduction]
    want = data.copy()
    for i, j in itertools.product(range(2), range(3)):
        want[idx[i, j] % 4, j] = ops(want[idx[i, j] % 4, j], upd[i, j])
    got = run_op("ScatterElements", [data, idx, upd], axis=0, reduction=reduction)
    np.testing.assert_array_equal(got, want)
    rows = np.array([[3], [1], [3] if reduction != "none" else [0]])
    rupd = rng.integers(-9, 9, (3, 3)).astype(np.int32)
    want = data.copy()
    for k in range(3):
        want[rows[k, 0]] = [ops(a, b) for a, b in zip(want[rows[k, 0]], rupd[k])]
    got = run_op("ScatterND", [data, rows, rupd], reduction=reduction)
    np.testing.assert_array_equal(got, want)


def test_one_hot_non_zero_compress_trilu(x):
    ind = np.array([[1, -1], [5, 0]], np.int64)
    y = run_op(
        "OneHot", [ind, np.array(4, np.int64), np.array([2.0, 7.0], np.float32)], consts=[1], axis=1
    )
    assert y.shape == (2, 4, 2)
    for i, j, d in itertools.product(range(2), range(2), range(4)):
        assert y[i, d, j] == (7.0 if ind[i, j] % 4 == d and ind[i, j] < 4 else 2.0)
    m = x > 0.5
    nz = run_op("NonZero", [m])
    assert nz.dtype == np.int64
    assert sorted(map(tuple, nz.T)) == sorted(zip(*np.where(m)))
    cond = np.array([True, False, True])
    np.testing.assert_array_equal(run_op("Compress", [x, cond], axis=0), x[[0, 2]])
    np.testing.assert_array_equal(run_op("Compress", [x, cond]), x.reshape(-1)[[0, 2]])
    t = run_op("Trilu", [x, np.array(-1, np.int64)], upper=0)
    for i, j in itertools.product(range(4), range(5)):
        np.testing.assert_array_equal(t[:, i, j], x[:, i, j] * (j <= i - 1))


@pytest.mark.parametrize("is_sorted", [0, 1])
def test_unique(is_sorted):
    data = np.array([4, 1, 4, 3, 1, 9], np.int32)
    y, first, inverse, counts = run_op("Unique", [data], num_outputs=4, sorted=is_sorted)
    order = sorted(set(data.tolist())) if is_sorted else list(dict.fromkeys(data.tolist()))
    assert y.tolist() == order
    assert first.tolist() == [data.tolist().index(v) for v in order]
    assert inverse.tolist() == [order.index(v) for v in data.tolist()]
    assert counts.tolist() == [data.tolist().count(v) for v in order]
    rows = np.array([[1, 2], [0, 5], [1, 2]], np.int64)
    y, _, inverse, _ = run_op("Unique", [rows], num_outputs=4, axis=0)
    assert y.tolist() == [[0, 5], [1, 2]] and inverse.tolist() == [1, 0, 1]


def test_reverse_sequence_and_tensor_scatter(x):
    lens = np.array([2, 0, 4, 1, 3], np.int64)  # batch along axis 2 of x, time along axis 1
    y = run_op("ReverseSequence", [x, lens], batch_axis=2, time_axis=1)
    for b, n in enumerate(lens):
        np.testing.assert_array_equal(y[:, :n, b], x[:, :n, b][:, ::-1])
        np.testing.assert_array_equal(y[:, n:, b], x[:, n:, b])
    cache = np.arange(2 * 2 * 4 * 3, dtype=np.float32).reshape(2, 2, 4, 3)
    upd = -np.ones((2, 2, 3, 3), np.float32) * np.arange(1, 4).reshape(1, 1, 3, 1)
    where = np.array([1, 3], np.int64)
    got = run_op("TensorScatter", [cache, upd, where], mode="circular")
    want = cache.copy()
    for b, start in enumerate(where):
        for s in range(3):
            want[b, :, (start + s) % 4] = upd[b, :, s]
    np.testing.assert_array_equal(got, want)


def test_old_slice_and_scatter_are_upgraded():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Slice", ["x"], ["s"], starts=[1, -4], ends=[3, 100], axes=[0, 1]),
        helper.make_node("Scatter", ["s", "i", "u"], ["y"], axis=1),
    ]
    idx = np.array([[3, 0], [1, 2]], np.int64)
    upd = np.array([[10, 20], [30, 40]], np.float32)
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6]),
        helper.make_tensor_value_info("i", TensorProto.INT64, [2, 2]),
        helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 2]),
    ]
    model = make_model(
        nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=9
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    assert prog.graph.nodes[-1].op == "ScatterElements"
    (y,) = prog.compile("ref").run({"x": x, "i": idx, "u": upd})
    want = x[1:3, 2:].copy()
    want[0, 3], want[0, 0], want[1, 1], want[1, 2] = 10, 20, 30, 40
    np.testing.assert_array_equal(y, want)


def test_static_inference_from_constant_inputs(x):
    cond = np.array([True, False, True, True])
    g, _ = build_graph("Compress", [x, cond], consts=[1], axis=1)
    assert g.outputs[0].type.dims == (3, 3, 5)
    depth = np.array(6, np.int64)
    g, _ = build_graph("OneHot", [i64(1, 2), depth, np.array([0, 1], np.int8)], consts=[1])
    assert g.outputs[0].type == TensorType(DType.i8, (2, 6))
    g, _ = build_graph("Gather", [x, i64(1, 0)], axis=-1)
    assert g.outputs[0].type.dims == (3, 4, 2)
    g, _ = build_graph("GatherND", [x, np.zeros((7, 2), np.int64)])
    assert g.outputs[0].type.dims == (7, 5)
