# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of the shape and layout ops."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import build_graph, i64, run_op


@pytest.fixture
def x():
    return np.random.default_rng(7).standard_normal((2, 3, 4)).astype(np.float32)


def test_reshape_zero_copies_and_minus_one_infers(x):
    y = run_op("Reshape", [x, i64(0, -1)], consts=[1])
    np.testing.assert_array_equal(y, x.reshape(2, 12))
    g, _ = build_graph("Reshape", [x, i64(4, 0, -1)], consts=[1])
    assert g.outputs[0].type.dims == (4, 3, 2)
    empty = np.zeros((0, 3), np.float32)
    assert run_op("Reshape", [empty, i64(3, 0)], consts=[1], allowzero=1).shape == (3, 0)


def test_reshape_of_unknown_shape_keeps_rank(x):
    g, _ = build_graph("Reshape", [x, i64(6, 4)])
    assert g.outputs[0].type.rank == 2 and not g.outputs[0].type.is_static


def test_flatten_squeeze_unsqueeze(x):
    np.testing.assert_array_equal(run_op("Flatten", [x], axis=-1), x.reshape(6, 4))
    np.testing.assert_array_equal(run_op("Flatten", [x], axis=0), x.reshape(1, 24))
    y = x[:, :1, None]
    np.testing.assert_array_equal(run_op("Squeeze", [y, i64(1, -2)], consts=[1]), x[:, 0])
    assert run_op("Squeeze", [y]).shape == (2, 4)
    z = run_op("Unsqueeze", [x, i64(-1, 0)], consts=[1])
    assert z.shape == (1, 2, 3, 4, 1)
    np.testing.assert_array_equal(z.reshape(x.shape), x)


def test_transpose_concat_split(x):
    np.testing.assert_array_equal(run_op("Transpose", [x], perm=(1, 2, 0)), x.transpose(1, 2, 0))
    np.testing.assert_array_equal(run_op("Transpose", [x]), x.transpose())
    w = x[:, :2] * 3
    np.testing.assert_array_equal(run_op("Concat", [x, w], axis=-2), np.concatenate([x, w], 1))
    parts = run_op("Split", [np.arange(5.0)], num_outputs=3, op_attrs={"num_outputs": 3})
    assert [p.tolist() for p in parts] == [[0, 1], [2, 3], [4]]
    parts = run_op("Split", [x, i64(1, 3)], consts=[1], num_outputs=2, axis=2)
    np.testing.assert_array_equal(parts[0], x[:, :, :1])
    np.testing.assert_array_equal(parts[1], x[:, :, 1:])


def test_expand_and_tile_shapes_are_static():
    a = np.arange(3, dtype=np.int32).reshape(3, 1)
    y = run_op("Expand", [a, i64(2, 1, 4)], consts=[1])
    assert y.dtype == np.int32 and y.shape == (2, 3, 4)
    assert (y == a).all()
    t = run_op("Tile", [a, i64(2, 3)], consts=[1])
    np.testing.assert_array_equal(t, np.block([[a, a, a], [a, a, a]]))
    g, _ = build_graph("Tile", [a, i64(2, 3)], consts=[1])
    assert g.outputs[0].type.dims == (6, 3)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes(x, mode):
    pads = i64(1, 0, 2, 0, 2, 1)
    value = np.array(1.5, np.float32)
    y = run_op("Pad", [x, pads, value], consts=[1], mode=mode)
    widths = [(1, 0), (0, 2), (2, 1)]
    want = (
        np.pad(x, widths, constant_values=1.5)
        if mode == "constant"
        else np.pad(x, widths, mode=mode)
    )
    np.testing.assert_array_equal(y, want)


def test_pad_axes_and_negative_pads(x):
    y = run_op("Pad", [x, i64(-1, 2, 0, -1), None, i64(2, 1)], consts=[1, 3])
    want = np.zeros((2, 4, 3), np.float32)
    want[:, 2:, :] = x[:, :2, 1:]
    np.testing.assert_array_equal(y, want)


def test_shape_size_dropout(x):
    np.testing.assert_array_equal(run_op("Shape", [x]), [2, 3, 4])
    np.testing.assert_array_equal(run_op("Shape", [x], start=-2, end=10), [3, 4])
    assert run_op("Size", [x]) == 24
    out, mask = run_op("Dropout", [x, np.array(0.3, np.float32)], num_outputs=2)
    np.testing.assert_array_equal(out, x)
    assert mask.dtype == bool and mask.all()


def test_depth_to_space_and_back():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 8, 2, 3)).astype(np.float32)
    b = 2
    for mode in ("DCR", "CRD"):
        y = run_op("DepthToSpace", [x], blocksize=b, mode=mode)
        assert y.shape == (1, 2, 4, 6)
        for c in range(2):
            for h in range(4):
                for w in range(6):
                    i, j = h % b, w % b
                    src = (i * b + j) * 2 + c if mode == "DCR" else c * b * b + i * b + j
                    assert y[0, c, h, w] == x[0, src, h // b, w // b]
        np.testing.assert_array_equal(run_op("SpaceToDepth", [y], blocksize=b, mode=mode), x)


def test_symbolic_dims_survive_inference():
    g = Graph()
    v = g.add_input("x", TensorType(DType.f16, ("N", 3, 4)))
    assert g.add("Flatten", v, axis=1).type.dims[1] == 12
    assert g.add("Transpose", v, perm=(2, 0, 1)).type.dims == (4, "N", 3)
    assert g.add("Shape", v).type == TensorType(DType.i64, (3,))
    s = g.add("Unsqueeze", v, g.constant(i64(1)))
    assert s.type.dims == ("N", 1, 3, 4)
    u = g.add_input("u", TensorType(DType.f32, None))
    assert g.add("Squeeze", u).type.dims is None
    assert g.add("Concat", u, u, axis=0).type.dims is None


def test_old_opset_forms_are_upgraded():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 1, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Squeeze", ["x"], ["s"], axes=[1]),
        helper.make_node("Split", ["s"], ["a", "b"], axis=1, split=[2, 4]),
        helper.make_node("Pad", ["a"], ["p"], pads=[0, 1, 0, 0], value=5.0),
        helper.make_node("Unsqueeze", ["b"], ["u"], axes=[0]),
        helper.make_node("Dropout", ["p"], ["d", "m"], ratio=0.2),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 6])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("d", "u", "m")],
        opset=9,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    d, u, m = prog.compile("ref").run({"x": x})
    np.testing.assert_array_equal(d, np.pad(x[:, 0, :2], [(0, 0), (1, 0)], constant_values=5))
    np.testing.assert_array_equal(u, x[None, :, 0, 2:])
    assert m.dtype == np.float32 and (m == 1).all() and m.shape == (2, 3)


def test_reshape_cancels_symbols_shared_with_the_input():
    g = Graph()
    v = g.add_input("x", TensorType(DType.f32, ("N", 3, 4)))
    assert g.add("Reshape", v, g.constant(i64(0, -1))).type.dims == ("N", 12)
    three_n = g.add("Reshape", v, g.constant(i64(-1, 4))).type.dims
    assert three_n[1] == 4 and isinstance(three_n[0], str) and three_n[0] != "N"
    assert g.add("Reshape", v, g.constant(i64(2, 3, 2, -1))).type.dims == (2, 3, 2, "N")
    assert g.add("Flatten", v, axis=1).type.dims == ("N", 12)
    with pytest.raises(graphkiln.GraphError):
        g.add("Reshape", g.add_input("y", TensorType(DType.f32, (3, 4))), g.constant(i64(5, -1)))
