# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu target's data movement and shape kernels (lower_data.py) against ref, bit-exact:
Transpose, Slice, Concat, Split, Expand, Tile, Pad, Gather, GatherElements, DepthToSpace,
SpaceToDepth, Trilu, CumSum, OneHot (depth a run-time input too), and Shape / Size /
ConstantOfShape / Range (folded by the passes in a model, so also lowered straight from IR)."""

import itertools

import ml_dtypes
import numpy as np
import pytest

import graphkiln as gk
from graphkiln.ir import DType, Graph, TensorType
from graphkiln.targets.native.lower import LoweringError
from graphkiln.targets.native.lower_support import node_supported
from graphkiln.targets.cpu.table import SUPPORT
from graphkiln.targets.cpu.target import CpuExecutable

from cpu_testing import check_cpu, node, onnx_model, rand

DTYPES = [np.float32, np.float16, np.float64, np.int64, np.int32, np.int8, np.uint8, np.bool_]


def data(shape, seed=0, dtype=np.float32):
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rand(shape, seed, dtype, low=-100 if np.dtype(dtype).kind == "i" else 0, high=100)
    return rand(shape, seed, dtype)


def exact(model, feeds, **options):
    return check_cpu(model, feeds, rtol=0, atol=0, **options)


def one(op, x_shape, out_shape=None, inits=None, dtype=np.float32, extra=(), opset=21, **attrs):
    """A one-node model over graph input x (plus `extra` named inputs from inits)."""
    names = ["x", *extra]
    return onnx_model(
        [node(op, names, ["y"], **attrs)],
        {"x": x_shape},
        {"y": out_shape},
        inits,
        opset,
        {"x": dtype},
    )


# -- Transpose -----------------------------------------------------------------------------
@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))))
def test_transpose_rank4_every_perm(perm):
    x = data((2, 3, 4, 5), seed=1)
    exact(one("Transpose", x.shape, perm=list(perm)), {"x": x})


@pytest.mark.parametrize(
    "shape,perm",
    [
        ((1, 128, 12, 64), (0, 2, 1, 3)),  # (B,S,H,D) -> (B,H,S,D)
        ((2, 12, 128, 64), (0, 1, 3, 2)),  # (B,H,S,D) -> (B,H,D,S)
        ((2, 12, 64, 128), (0, 2, 1, 3)),
        ((1, 64, 28, 28), (0, 2, 3, 1)),  # NCHW -> NHWC
        ((1, 28, 28, 64), (0, 3, 1, 2)),  # NHWC -> NCHW
        ((33, 17), (1, 0)),
        ((3, 1, 7, 1, 5), (4, 3, 2, 1, 0)),
        ((7,), (0,)),
        ((5, 9, 3), (2, 0, 1)),
        ((5, 9, 3), (1, 2, 0)),
    ],
)
def test_transpose_shapes(shape, perm):
    x = data(shape, seed=2)
    exact(one("Transpose", shape, perm=list(perm)), {"x": x})


def test_transpose_default_perm_reverses():
    x = data((2, 3, 4), seed=3)
    exact(one("Transpose", x.shape), {"x": x})


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_dtypes(dtype):
    x = data((3, 20, 18), seed=4, dtype=dtype)
    exact(one("Transpose", x.shape, dtype=dtype, perm=[2, 0, 1]), {"x": x})


def test_transpose_of_channels_last_conv_output():
    model = onnx_model(
        [
            node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            node("Transpose", ["c"], ["y"], perm=[0, 2, 3, 1]),
        ],
        {"x": (1, 8, 10, 10)},
        {"y": (1, 10, 10, 16)},
        {"w": rand((16, 8, 3, 3), seed=5)},
    )
    check_cpu(model, {"x": rand((1, 8, 10, 10), seed=6)}, rtol=1e-4, atol=1e-5)


# -- Slice ---------------------------------------------------------------------------------
SLICES = [
    ([1], [3], None, None),
    ([0, 1], [2, -1], [0, 2], None),
    ([-3], [100], [-1], None),
    ([5, 1], [-100, 6], [0, 1], [-2, 2]),
    ([10], [-10], [1], [-1]),
    ([0], [7], [2], [3]),
    ([-1000], [1000], [0], [1]),
    ([3], [1], [0], None),  # empty
    ([2, 0, 1], [4, 7, 3], [0, 1, 2], [1, 3, 1]),
    ([-1], [-1000], [-2], [-3]),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICES)
def test_slice(starts, ends, axes, steps):
    inits = {"s": np.array(starts, np.int64), "e": np.array(ends, np.int64)}
    names = ["s", "e"]
    if axes is not None or steps is not None:
        inits["a"] = np.array(axes if axes is not None else range(len(starts)), np.int64)
        names.append("a")
    if steps is not None:
        inits["st"] = np.array(steps, np.int64)
        names.append("st")
    x = data((6, 7, 5), seed=7)
    exact(one("Slice", x.shape, None, inits, extra=names), {"x": x})


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_dtypes_i32_bounds(dtype):
    inits = {
        "s": np.array([1, -2], np.int32),
        "e": np.array([5, 0], np.int32),
        "a": np.array([0, 1], np.int32),
        "st": np.array([2, -1], np.int32),
    }
    x = data((6, 7), seed=8, dtype=dtype)
    exact(one("Slice", x.shape, None, inits, dtype=dtype, extra=["s", "e", "a", "st"]), {"x": x})


def test_slice_with_runtime_starts_gets_a_plan_per_value():
    model = onnx_model(
        [node("Slice", ["x", "s", "e"], ["y"])],
        {"x": (6,), "s": (1,)},
        {"y": None},
        {"e": np.array([5], np.int64)},
        dtypes={"s": np.int64},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    x = rand((6,))
    for start in (1, 3, 1, -2):
        (y,) = program.run({"x": x, "s": np.array([start], np.int64)})
        np.testing.assert_array_equal(y, x[start:5])
    assert program.stats()["plan"]["plans"] == 3
    assert program.stats()["plan"]["ref_nodes"] == 0


def test_large_integer_inputs_are_not_planned_per_value():
    model = onnx_model(
        [node("Slice", ["x", "s", "e"], ["y"])],
        {"x": (6,), "s": (100,)},
        {"y": None},
        {"e": np.array([5], np.int64)},
        dtypes={"s": np.int64},
    )
    with pytest.raises(Exception, match="Slice"):
        gk.parse_onnx_buffer(model).compile("cpu")


# -- Concat / Split ------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_concat_axes(axis):
    shapes = []
    for extra in (2, 3, 1):
        s = [2, 3, 4, 5]
        s[axis] = extra
        shapes.append(tuple(s))
    names = ["a", "b", "c"]
    model = onnx_model(
        [node("Concat", names, ["y"], axis=axis)], dict(zip(names, shapes)), {"y": None}
    )
    exact(model, {n: data(s, seed=i) for i, (n, s) in enumerate(zip(names, shapes))})


@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_dtypes(dtype):
    model = onnx_model(
        [node("Concat", ["a", "b"], ["y"], axis=1)],
        {"a": (3, 2), "b": (3, 5)},
        {"y": None},
        dtypes={"a": dtype, "b": dtype, "y": dtype},
    )
    exact(model, {"a": data((3, 2), 1, dtype), "b": data((3, 5), 2, dtype)})


def test_concat_with_empty_input():
    model = onnx_model(
        [node("Concat", ["a", "b", "c"], ["y"], axis=0)],
        {"a": (2, 3), "b": (0, 3), "c": (1, 3)},
        {"y": None},
    )
    exact(model, {"a": data((2, 3), 1), "b": data((0, 3), 2), "c": data((1, 3), 3)})


def test_concat_of_channels_last_conv_outputs():
    model = onnx_model(
        [
            node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
            node("Conv", ["x", "w2"], ["c2"]),
            node("Concat", ["c1", "x", "c2"], ["cat"], axis=1),
            node("Conv", ["cat", "w3"], ["y"]),
        ],
        {"x": (1, 8, 9, 9)},
        {"y": None},
        {
            "w1": rand((16, 8, 3, 3), seed=1),
            "w2": rand((4, 8, 1, 1), seed=2),
            "w3": rand((6, 28, 1, 1), seed=3),
        },
    )
    check_cpu(model, {"x": rand((1, 8, 9, 9), seed=4)}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch", [1, 2])
def test_dense_block_concat_of_many_channels_last_maps(batch):
    """A DenseNet block's Concat: a block input and five convolutions' maps (channels-last,
    of different widths, 28x28: enough rows for the threads) into one output, row by row."""
    widths = [8, 32, 16, 4, 32, 12]
    inits = {"wb": rand((8, 8, 1, 1), seed=9)}
    nodes = [node("Conv", ["x", "wb"], ["c"]), node("Relu", ["c"], ["base"])]
    names = ["base"]
    for i, k in enumerate(widths[1:]):
        inits[f"w{i}"] = rand((k, 8, 3, 3), seed=10 + i)
        nodes.append(node("Conv", ["base", f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        names.append(f"c{i}")
    nodes.append(node("Concat", names, ["cat"], axis=1))
    inits["wy"] = rand((6, sum(widths), 1, 1), seed=20)
    nodes.append(node("Conv", ["cat", "wy"], ["y"]))
    model = onnx_model(nodes, {"x": (batch, 8, 28, 28)}, {"y": None}, inits)
    check_cpu(model, {"x": rand((batch, 8, 28, 28), seed=4)}, rtol=1e-4, atol=1e-5)


def test_concat_of_a_transposed_input_and_rows():
    """A Transpose's output beside two plain inputs, concatenated along the last axis (300
    rows of 5 + 7 + 3 values, filled row by row)."""
    model = onnx_model(
        [
            node("Transpose", ["a"], ["ta"], perm=[1, 0]),
            node("Concat", ["ta", "b", "c"], ["y"], axis=1),
        ],
        {"a": (5, 300), "b": (300, 7), "c": (300, 3)},
        {"y": None},
    )
    exact(model, {"a": data((5, 300), 1), "b": data((300, 7), 2), "c": data((300, 3), 3)})


@pytest.mark.parametrize("axis,sizes", [(0, [1, 3, 2]), (1, [4, 3]), (-1, [2, 2, 1]), (2, [0, 5])])
def test_split_sizes(axis, sizes):
    x = data((6, 7, 5), seed=9)
    names = [f"y{i}" for i in range(len(sizes))]
    model = onnx_model(
        [node("Split", ["x", "s"], names, axis=axis)],
        {"x": x.shape},
        {n: None for n in names},
        {"s": np.array(sizes, np.int64)},
    )
    exact(model, {"x": x})


@pytest.mark.parametrize("axis,count", [(0, 3), (1, 3), (-1, 2), (2, 5)])
def test_split_num_outputs(axis, count):
    x = data((6, 7, 5), seed=10, dtype=np.int64)
    names = [f"y{i}" for i in range(count)]
    model = onnx_model(
        [node("Split", ["x"], names, axis=axis, num_outputs=count)],
        {"x": x.shape},
        {n: None for n in names},
        dtypes={"x": np.int64},
    )
    exact(model, {"x": x})


def test_split_feeding_other_nodes():
    model = onnx_model(
        [
            node("Split", ["x"], ["a", "b"], axis=0, num_outputs=2),
            node("Transpose", ["a"], ["ta"], perm=[1, 0]),
            node("Concat", ["ta", "b"], ["y"], axis=1),
        ],
        {"x": (4, 2)},
        {"y": None},
    )
    exact(model, {"x": data((4, 2), 3)})


# -- Expand / Tile -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,target",
    [
        ((3, 1), (2, 3, 4)),
        ((1,), (5,)),
        ((4,), (3, 4)),
        ((2, 1, 3), (2, 5, 3)),
        ((1, 1), (1, 1)),
        ((3, 4), (1, 1)),
    ],
)
def test_expand(shape, target):
    x = data(shape, seed=11)
    exact(one("Expand", shape, None, {"s": np.array(target, np.int64)}, extra=["s"]), {"x": x})


@pytest.mark.parametrize("dtype", [np.float16, np.int64, np.bool_])
def test_expand_dtypes(dtype):
    x = data((3, 1), seed=12, dtype=dtype)
    exact(
        one(
            "Expand", x.shape, None, {"s": np.array([2, 3, 6], np.int64)}, dtype=dtype, extra=["s"]
        ),
        {"x": x},
    )


@pytest.mark.parametrize(
    "shape,repeats",
    [((2, 3), (2, 3)), ((4,), (3,)), ((2, 1, 3), (1, 4, 2)), ((2, 3), (1, 1)), ((2, 3), (0, 2))],
)
def test_tile(shape, repeats):
    x = data(shape, seed=13, dtype=np.int32)
    exact(
        one("Tile", shape, None, {"r": np.array(repeats, np.int64)}, dtype=np.int32, extra=["r"]),
        {"x": x},
    )


# -- Pad -----------------------------------------------------------------------------------
PADS = [[1, 2, 3, 0], [0, 0, 0, 0], [2, -1, 1, 3], [-1, -2, 0, 1], [4, 5, 4, 5]]


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", PADS)
def test_pad_modes(mode, pads):
    x = data((4, 6), seed=14)
    if mode == "reflect" and max(pads) >= 4:
        pads = [min(p, 3) for p in pads]
    exact(
        one("Pad", x.shape, None, {"p": np.array(pads, np.int64)}, extra=["p"], mode=mode), {"x": x}
    )


def test_pad_constant_value_and_axes():
    x = data((2, 3, 4), seed=15)
    inits = {
        "p": np.array([1, -1, 2, 3], np.int64),
        "v": np.array(2.5, np.float32),
        "a": np.array([2, 0], np.int64),
    }
    exact(one("Pad", x.shape, None, inits, extra=["p", "v", "a"]), {"x": x})


def test_pad_runtime_constant_value():
    # a one-element 1-D input: 0-d graph inputs are turned 1-D by the cpu target's run()
    model = onnx_model(
        [node("Pad", ["x", "p", "v"], ["y"])],
        {"x": (3, 4), "v": (1,)},
        {"y": None},
        {"p": np.array([1, 2, 0, 1], np.int64)},
    )
    exact(model, {"x": data((3, 4), 16), "v": np.array([-7.0], np.float32)})


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.float16, np.bool_])
def test_pad_dtypes(dtype):
    x = data((3, 4), seed=17, dtype=dtype)
    inits = {"p": np.array([1, 0, 2, 3], np.int64)}
    names = ["p"]
    if dtype != np.bool_:
        inits["v"] = np.array(3, dtype)
        names.append("v")
    exact(one("Pad", x.shape, None, inits, dtype=dtype, extra=names), {"x": x})
    exact(one("Pad", x.shape, None, inits, dtype=dtype, extra=["p"], mode="edge"), {"x": x})


# -- Gather / GatherElements ---------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_gather(axis, idx_dtype):
    x = data((4, 5, 6), seed=18)
    size = x.shape[axis]
    idx = np.array([[0, size - 1, -1], [-size, 2, 1]], idx_dtype)
    model = onnx_model(
        [node("Gather", ["x", "i"], ["y"], axis=axis)],
        {"x": x.shape, "i": idx.shape},
        {"y": None},
        dtypes={"i": idx_dtype},
    )
    exact(model, {"x": x, "i": idx})


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_scalar_index_dtypes(dtype):
    x = data((5, 3), seed=19, dtype=dtype)
    for i in (0, 4, -2):
        model = onnx_model(
            [node("Gather", ["x", "i"], ["y"], axis=0)],
            {"x": x.shape},
            {"y": None},
            {"i": np.array(i, np.int64)},
            dtypes={"x": dtype, "y": dtype},
        )
        exact(model, {"x": x})


def test_gather_embedding_rows():
    x = data((1000, 96), seed=20)
    idx = np.random.default_rng(0).integers(-1000, 1000, size=(2, 64)).astype(np.int64)
    model = onnx_model(
        [node("Gather", ["x", "i"], ["y"], axis=0)],
        {"x": x.shape, "i": idx.shape},
        {"y": None},
        dtypes={"i": np.int64},
    )
    exact(model, {"x": x, "i": idx})


@pytest.mark.parametrize("op", ["Gather", "GatherElements"])
@pytest.mark.parametrize("bad", [5, -6])
def test_gather_index_out_of_range_raises(op, bad):
    model = onnx_model(
        [node(op, ["x", "i"], ["y"], axis=0)],
        {"x": (5, 2), "i": (1, 2)},
        {"y": None},
        dtypes={"i": np.int64},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(Exception, match="out of range"):
        program.run({"x": data((5, 2)), "i": np.array([[0, bad]], np.int64)})


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_gather_elements(axis, idx_dtype):
    x = data((4, 5, 6), seed=21, dtype=np.int64)
    shape = [4, 5, 6]
    shape[axis] = 7
    size = x.shape[axis]
    idx = np.random.default_rng(1).integers(-size, size, size=shape).astype(idx_dtype)
    model = onnx_model(
        [node("GatherElements", ["x", "i"], ["y"], axis=axis)],
        {"x": x.shape, "i": idx.shape},
        {"y": None},
        dtypes={"x": np.int64, "y": np.int64, "i": idx_dtype},
    )
    exact(model, {"x": x, "i": idx})


# -- DepthToSpace / SpaceToDepth -----------------------------------------------------------
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode):
    x = data((2, 12, 3, 4), seed=22)
    exact(one("DepthToSpace", x.shape, blocksize=2, mode=mode), {"x": x})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth(mode):
    x = data((2, 3, 6, 9), seed=23)
    # onnx's SpaceToDepth has no mode attribute before opset 24; the IR schema has one
    attrs = {} if mode == "DCR" else {"mode": mode}
    exact(
        one("SpaceToDepth", x.shape, blocksize=3, opset=21 if mode == "DCR" else 24, **attrs),
        {"x": x},
    )


# -- Trilu / CumSum / OneHot ---------------------------------------------------------------
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, 10, -10])
def test_trilu(upper, k):
    x = data((2, 5, 7), seed=24)
    if k is None:
        exact(one("Trilu", x.shape, upper=upper), {"x": x})
    else:
        exact(
            one("Trilu", x.shape, None, {"k": np.array(k, np.int64)}, extra=["k"], upper=upper),
            {"x": x},
        )


def test_trilu_runtime_k():
    model = onnx_model(
        [node("Trilu", ["x", "k"], ["y"], upper=0)],
        {"x": (4, 6), "k": (1,)},
        {"y": None},
        dtypes={"x": np.int32, "y": np.int32, "k": np.int64},
    )
    for k in (-2, 0, 3):
        exact(model, {"x": data((4, 6), 25, np.int32), "k": np.array([k], np.int64)})


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.float64])
def test_cumsum(axis, exclusive, reverse, dtype):
    x = data((3, 4, 5), seed=26, dtype=dtype)
    exact(
        one(
            "CumSum",
            x.shape,
            None,
            {"a": np.array(axis, np.int64)},
            dtype=dtype,
            extra=["a"],
            exclusive=exclusive,
            reverse=reverse,
        ),
        {"x": x},
    )


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    idx = np.array([[0, 3, -1], [-4, 7, 2]], np.int64)  # 7 is out of range: all off
    model = onnx_model(
        [node("OneHot", ["i", "d", "v"], ["y"], axis=axis)],
        {"i": idx.shape},
        {"y": None},
        {"d": np.array(4, np.int64), "v": np.array([-1.5, 2.0], np.float32)},
        dtypes={"i": np.int64},
    )
    exact(model, {"i": idx})


@pytest.mark.parametrize("axis", [None, 0, 1, -2, -1])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("depth_dtype", [np.float32, np.int64])
def test_one_hot_runtime_depth(axis, idx_dtype, depth_dtype):
    """depth a graph input (the plan is made per value), float indices truncated, negative
    ones wrapped, out-of-range ones all off."""
    idx = np.random.default_rng(40).uniform(-9.0, 9.0, size=(3, 4)).astype(idx_dtype)
    attrs = {} if axis is None else {"axis": axis}
    model = onnx_model(
        [node("OneHot", ["i", "d", "v"], ["y"], **attrs)],
        {"i": idx.shape, "d": (), "v": (2,)},
        {"y": None},
        dtypes={"i": idx_dtype, "d": depth_dtype},
    )
    for depth in (6, 3):
        feeds = {
            "i": idx,
            "d": np.array(depth, depth_dtype),
            "v": rand((2,), 41 + depth, low=0.5, high=4.0),
        }
        exact(model, feeds)


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16, np.int32, np.int8])
def test_one_hot_value_dtypes(dtype):
    idx = rand((2, 5), 42, np.int64, low=-5, high=7)
    model = onnx_model(
        [node("OneHot", ["i", "d", "v"], ["y"], axis=1)],
        {"i": idx.shape, "v": (2,)},
        {"y": None},
        {"d": np.array([5.0], np.float32)},
        dtypes={"i": np.int64, "v": dtype, "y": dtype},
    )
    exact(model, {"i": idx, "v": np.array([3, -2]).astype(dtype)})


# -- shape-like ops, lowered straight from IR (the passes fold them in a model) ----------------
def _ir_run(op, inputs: dict, attrs: dict, consts: dict | None = None):
    """One node over graph inputs (name -> array) and constants, compiled without passes;
    returns (cpu outputs, ref outputs)."""
    from graphkiln.targets.ref.target import evaluate

    g = Graph()
    args = []
    for name, array in inputs.items():
        args.append(g.add_input(name, TensorType(DType.from_numpy(array.dtype), array.shape)))
    for name, array in (consts or {}).items():
        args.append(g.constant(array, name))
    n = g.add_node(op, args, attrs)
    assert node_supported(n, SUPPORT)
    g.outputs = list(n.outputs)
    cpu = CpuExecutable(g, False).run(list(inputs.values()))
    ref = evaluate(n, [*inputs.values(), *(consts or {}).values()])
    return cpu, ref


def _same(cpu, ref):
    for c, r in zip(cpu, ref):
        r = np.asarray(r)
        assert c.dtype == r.dtype and c.shape == r.shape
        np.testing.assert_array_equal(c, r)


@pytest.mark.parametrize(
    "start,end", [(0, None), (1, None), (-2, None), (0, -1), (-10, 10), (3, 1)]
)
def test_shape_ir(start, end):
    _same(*_ir_run("Shape", {"x": data((2, 3, 4, 5))}, {"start": start, "end": end}))


def test_size_ir():
    _same(*_ir_run("Size", {"x": data((2, 3, 4))}, {}))


@pytest.mark.parametrize(
    "value",
    [
        None,
        np.array([7], np.int64),
        np.array([2.5], np.float32),
        np.array([True]),
        np.array([-3], np.int8),
    ],
)
def test_constant_of_shape_ir(value):
    _same(*_ir_run("ConstantOfShape", {}, {"value": value}, {"s": np.array([3, 4], np.int64)}))


@pytest.mark.parametrize(
    "start,limit,delta", [(0, 10, 3), (5, -3, -2), (1.5, 4.0, 0.25), (10, 0, 1)]
)
def test_range_ir(start, limit, delta):
    dtype = np.float32 if isinstance(start, float) else np.int64
    consts = {k: np.array(v, dtype) for k, v in (("a", start), ("b", limit), ("c", delta))}
    _same(*_ir_run("Range", {}, {}, consts))


def test_lowering_error_class_is_raised_for_refused_nodes():
    assert issubclass(LoweringError, ValueError)


# -- zero-copy views -----------------------------------------------------------------------
def _kernels(model):
    program = gk.parse_onnx_buffer(model).compile("cpu")
    (segments,) = program._executable._plans.values()
    return [step.kernel for s in segments for step in s.plan.steps]


def test_views_slice_split_gather_transpose():
    # every node but the last is a view of x: only the final Concat copies
    x = data((1, 6, 4, 5), seed=40)
    model = onnx_model(
        [
            node("Slice", ["x", "s", "e", "a"], ["sl"]),  # rows 1..3 of axis 1
            node("Split", ["x"], ["p", "q"], axis=1, num_outputs=2),  # two halves
            node("Gather", ["x", "g"], ["ga"], axis=1),  # row 4
            node("Unsqueeze", ["ga", "u"], ["t"]),
            node("Transpose", ["t"], ["tu"], perm=[1, 0, 2, 3]),  # moves a 1-dim
            node("Concat", ["sl", "p", "q", "tu"], ["y"], axis=1),
        ],
        {"x": x.shape},
        {"y": None},
        {
            "s": np.array([1], np.int64),
            "e": np.array([3], np.int64),
            "a": np.array([1], np.int64),
            "g": np.array(4, np.int64),
            "u": np.array([1], np.int64),
        },
    )
    exact(model, {"x": x})
    assert _kernels(model) == ["CopyRegions"]


def test_view_chain_of_slices_and_outputs():
    x = data((6, 4), seed=41)
    model = onnx_model(
        [
            node("Slice", ["x", "s", "e"], ["a"]),
            node("Slice", ["a", "s2", "e2"], ["b"]),
            node("Transpose", ["b"], ["y"], perm=[1, 0]),
            node("Split", ["a"], ["z", "w"], axis=0, num_outputs=2),
        ],
        {"x": x.shape},
        {"y": None, "z": None, "w": None},
        {
            "s": np.array([1], np.int64),
            "e": np.array([5], np.int64),
            "s2": np.array([2], np.int64),
            "e2": np.array([4], np.int64),
        },
    )
    exact(model, {"x": x})


# -- ScatterND / ScatterElements -------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_scatter_nd(reduction, dtype):
    x = data((4, 5, 3), seed=50, dtype=dtype)
    idx = np.array([[[1, -1]], [[3, 0]], [[-4, 2]]], np.int64)  # (3, 1, 2): rows of 3
    upd = data((3, 1, 3), seed=51, dtype=dtype)
    model = onnx_model(
        [node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)],
        {"x": x.shape, "i": idx.shape, "u": upd.shape},
        {"y": None},
        dtypes={"x": dtype, "y": dtype, "u": dtype, "i": np.int64},
    )
    exact(model, {"x": x, "i": idx, "u": upd})


def test_scatter_nd_full_index_bool():
    x = data((3, 4), seed=52, dtype=np.bool_)
    idx = np.array([[0, 1], [2, 3], [-1, 0]], np.int64)
    upd = np.array([True, False, True])
    model = onnx_model(
        [node("ScatterND", ["x", "i", "u"], ["y"])],
        {"x": x.shape, "i": idx.shape, "u": upd.shape},
        {"y": None},
        dtypes={"x": np.bool_, "y": np.bool_, "u": np.bool_, "i": np.int64},
    )
    exact(model, {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_scatter_elements(axis, reduction, idx_dtype):
    x = data((4, 5, 6), seed=53)
    shape = [4, 5, 6]
    shape[axis] = 3
    size = x.shape[axis]
    # distinct indices along the axis (duplicates with "none" are order-dependent)
    rng = np.random.default_rng(2)
    idx = np.moveaxis(
        np.argsort(
            rng.random(np.moveaxis(np.zeros(shape), axis, -1).shape[:-1] + (size,)), axis=-1
        )[..., :3],
        -1,
        axis,
    )
    idx = (idx - size * (idx % 2)).astype(idx_dtype)  # some negative
    upd = data(idx.shape, seed=54)
    model = onnx_model(
        [node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis, reduction=reduction)],
        {"x": x.shape, "i": idx.shape, "u": upd.shape},
        {"y": None},
        dtypes={"i": idx_dtype},
    )
    exact(model, {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize("op", ["ScatterND", "ScatterElements"])
def test_scatter_index_out_of_range_raises(op):
    shape_i = (1, 1) if op == "ScatterND" else (1, 2)
    shape_u = (1, 2) if op == "ScatterND" else (1, 2)
    model = onnx_model(
        [node(op, ["x", "i", "u"], ["y"])],
        {"x": (3, 2), "i": shape_i, "u": shape_u},
        {"y": None},
        dtypes={"i": np.int64},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(Exception, match="out of range"):
        program.run({"x": data((3, 2)), "i": np.full(shape_i, 3, np.int64), "u": data(shape_u, 1)})


# -- Resize (nearest) ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "coord",
    ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn"],
)
@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_resize_nearest_scales(coord, nearest):
    x = data((1, 3, 5, 7), seed=60)
    inits = {"r": np.zeros(0, np.float32), "s": np.array([1, 1, 2.0, 0.6], np.float32)}
    opset = 11 if coord == "tf_half_pixel_for_nn" else 21
    exact(
        one(
            "Resize",
            x.shape,
            None,
            inits,
            extra=["r", "s"],
            opset=opset,
            mode="nearest",
            coordinate_transformation_mode=coord,
            nearest_mode=nearest,
        ),
        {"x": x},
    )


def test_resize_nearest_sizes_and_axes():
    x = data((2, 3, 4, 6), seed=61, dtype=np.int64)
    model = onnx_model(
        [node("Resize", ["x", "", "", "z"], ["y"], mode="nearest", axes=[3, 2])],
        {"x": x.shape},
        {"y": None},
        {"z": np.array([9, 3], np.int64)},
        dtypes={"x": np.int64, "y": np.int64},
    )
    exact(model, {"x": x})


# -- Resize (linear, cubic: one ResizeAxis step per resized axis) ---------------------------
@pytest.mark.parametrize(
    "coord",
    ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"],
)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("antialias", [0, 1])
def test_resize_linear_and_cubic_scales(coord, mode, antialias):
    x = data((2, 3, 5, 7), seed=62)
    inits = {"r": np.zeros(0, np.float32), "s": np.array([1, 1, 2.0, 0.6], np.float32)}
    check_cpu(
        one(
            "Resize",
            x.shape,
            None,
            inits,
            extra=["r", "s"],
            mode=mode,
            coordinate_transformation_mode=coord,
            antialias=antialias,
        ),
        {"x": x},
        rtol=1e-5,
        atol=1e-5,
    )


def test_resize_bilinear_sizes_and_axes_upsample_and_shrink():
    x = data((1, 4, 6, 9), seed=63)
    model = onnx_model(
        [
            node(
                "Resize",
                ["x", "", "", "z"],
                ["y"],
                mode="linear",
                axes=[3, 2],
                cubic_coeff_a=-0.5,
                exclude_outside=1,
            )
        ],
        {"x": x.shape},
        {"y": None},
        {"z": np.array([4, 13], np.int64)},
    )
    check_cpu(model, {"x": x}, rtol=1e-5, atol=1e-5)


def test_resize_linear_is_refused_for_f64_and_crop_and_resize():
    for dtype, coord in ((np.float64, "half_pixel"), (np.float32, "tf_crop_and_resize")):
        inits = {
            "r": np.array([0, 0, 0.1, 0.1, 1, 1, 0.9, 0.9], np.float32),
            "s": np.array([1, 1, 2, 2], np.float32),
        }
        model = one(
            "Resize",
            (1, 1, 4, 4),
            None,
            inits,
            dtype=dtype,
            extra=["r", "s"],
            mode="linear",
            coordinate_transformation_mode=coord,
        )
        with pytest.raises(LoweringError, match="Resize"):
            gk.parse_onnx_buffer(model).compile("cpu")


@pytest.mark.parametrize(
    "op", ["Resize", "Pad", "Slice", "Split", "DepthToSpace", "Expand", "Tile"]
)
def test_channels_last_inputs(op):
    # the conv output is channels-last: the kernels read it through its strides
    second = {
        "Resize": node("Resize", ["c", "", "s"], ["y"], mode="nearest"),
        "Pad": node("Pad", ["c", "p"], ["y"], mode="reflect"),
        "Slice": node("Slice", ["c", "b", "e", "a"], ["y"]),
        "Split": node("Split", ["c"], ["y", "y2"], axis=1, num_outputs=2),
        "DepthToSpace": node("DepthToSpace", ["c"], ["y"], blocksize=2),
        "Expand": node("Expand", ["c", "sh"], ["y"]),
        "Tile": node("Tile", ["c", "t"], ["y"]),
    }[op]
    outs = {"y": None, "y2": None} if op == "Split" else {"y": None}
    model = onnx_model(
        [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), second],
        {"x": (1, 4, 6, 6)},
        outs,
        {
            "w": rand((8, 4, 3, 3), seed=70),
            "s": np.array([1, 1, 2, 1.5], np.float32),
            "p": np.array([0, 1, 2, 0, 2, 1, 0, 1], np.int64),
            "b": np.array([2, 1], np.int64),
            "e": np.array([7, 5], np.int64),
            "a": np.array([1, 3], np.int64),
            "sh": np.array([2, 8, 6, 6], np.int64),
            "t": np.array([1, 2, 1, 2], np.int64),
        },
    )
    check_cpu(model, {"x": rand((1, 4, 6, 6), seed=71)}, rtol=1e-4, atol=1e-5)


def test_concat_and_split_of_many_small_parts():
    names = [f"a{i}" for i in range(10)]
    shapes = {n: (1, 4 + i, 20, 20) for i, n in enumerate(names)}
    model = onnx_model(
        [
            node("Concat", names, ["y"], axis=1),
            node("Split", ["y"], [f"s{i}" for i in range(7)], axis=1, num_outputs=7),
        ],
        shapes,
        {"y": None, **{f"s{i}": None for i in range(7)}},
    )
    exact(model, {n: data(s, seed=i) for i, (n, s) in enumerate(shapes.items())})


def test_one_input_concat_is_a_view():
    model = onnx_model(
        [
            node("Conv", ["x", "w"], ["c"]),
            node("Concat", ["c"], ["k"], axis=1),
            node("Concat", ["k", "c"], ["y"], axis=1),
        ],
        {"x": (1, 3, 5, 5)},
        {"y": None},
        {"w": rand((4, 3, 1, 1), seed=80)},
    )
    check_cpu(model, {"x": rand((1, 3, 5, 5), seed=81)}, rtol=1e-4, atol=1e-5)
    assert _kernels(model).count("CopyRegions") == 1


@pytest.mark.parametrize("axis", [0, -1, 2])
@pytest.mark.parametrize("axis_dtype", [np.int64, np.int32])
def test_cumsum_runtime_axis(axis, axis_dtype):
    model = onnx_model(
        [node("CumSum", ["x", "a"], ["y"], reverse=1)],
        {"x": (3, 4, 5), "a": (1,)},
        {"y": None},
        dtypes={"a": axis_dtype},
    )
    exact(model, {"x": data((3, 4, 5), 90), "a": np.array([axis], axis_dtype)})


def test_cumsum_runtime_axis_out_of_range_raises():
    model = onnx_model(
        [node("CumSum", ["x", "a"], ["y"])],
        {"x": (3, 4), "a": (1,)},
        {"y": None},
        dtypes={"a": np.int64},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(Exception, match="out of range"):
        program.run({"x": data((3, 4)), "a": np.array([2], np.int64)})


def test_gather_scalar_index_graph_input():
    model = onnx_model(
        [node("Gather", ["x", "i"], ["y"], axis=1)],
        {"x": (4, 5), "i": ()},
        {"y": None},
        dtypes={"i": np.int64},
    )
    for i in (0, -1, 3):
        exact(model, {"x": data((4, 5), 91), "i": np.array(i, np.int64)})


def test_nhwc_input_transposed_for_a_conv_is_a_channels_last_view():
    model = onnx_model(
        [
            node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
            node("Conv", ["t", "w"], ["y"], pads=[1, 1, 1, 1]),
        ],
        {"x": (1, 7, 6, 5)},
        {"y": None},
        {"w": rand((4, 5, 3, 3), seed=92)},
    )
    check_cpu(model, {"x": rand((1, 7, 6, 5), seed=93)}, rtol=1e-4, atol=1e-5)
    assert "CopyRegions" not in _kernels(model)
