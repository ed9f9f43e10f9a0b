# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The Pointwise kernel: every op it runs, attributes, broadcasting, dtypes (integer results
exact), fused chains and channels-last inputs."""

import numpy as np
import pytest
from onnx import TensorProto

from cpu_testing import check_cpu, node, onnx_model, rand, run_both

UNARY = {  # op -> (low, high) of the test data
    "Neg": (-3, 3),
    "Abs": (-3, 3),
    "Exp": (-20, 20),
    "Log": (0.01, 10),
    "Sqrt": (0, 10),
    "Reciprocal": (0.1, 3),
    "Floor": (-5, 5),
    "Ceil": (-5, 5),
    "Round": (-5, 5),
    "Sign": (-2, 2),
    "Sin": (-5, 5),
    "Cos": (-5, 5),
    "Tan": (-1.5, 1.5),
    "Asin": (-1, 1),
    "Acos": (-1, 1),
    "Atan": (-5, 5),
    "Sinh": (-5, 5),
    "Cosh": (-5, 5),
    "Asinh": (-5, 5),
    "Acosh": (1, 5),
    "Atanh": (-0.99, 0.99),
    "Tanh": (-6, 6),
    "Sigmoid": (-20, 20),
    "Erf": (-4, 4),
    "Relu": (-2, 2),
    "HardSwish": (-5, 5),
    "Softplus": (-30, 30),
    "Softsign": (-5, 5),
    "Mish": (-10, 10),
    "Gelu": (-6, 6),
    "LeakyRelu": (-2, 2),
    "Elu": (-3, 3),
    "Selu": (-3, 3),
    "Celu": (-3, 3),
    "HardSigmoid": (-5, 5),
    "ThresholdedRelu": (-2, 3),
    "Shrink": (-2, 2),
}
OPSET = {"Swish": 24, "Mish": 18, "Gelu": 20}


def _unary(op, shape, attrs=None, dtype=np.float32, low=-1, high=1, opset=21, seed=0):
    model = onnx_model(
        [node(op, ["x"], ["y"], **(attrs or {}))],
        {"x": shape},
        {"y": shape},
        opset=opset,
        dtypes={"x": dtype, "y": dtype},
    )
    return model, {"x": rand(shape, seed, dtype, low, high)}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    low, high = UNARY[op]
    model, feeds = _unary(op, (3, 37, 41), low=low, high=high, opset=OPSET.get(op, 21))
    check_cpu(model, feeds, rtol=2e-6)


@pytest.mark.parametrize(
    "op,attrs",
    [
        ("LeakyRelu", {"alpha": 0.3}),
        ("Elu", {"alpha": 0.7}),
        ("Selu", {"alpha": 1.5, "gamma": 2.0}),
        ("Celu", {"alpha": 2.0}),
        ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
        ("ThresholdedRelu", {"alpha": 0.5}),
        ("Shrink", {"bias": 0.2, "lambd": 0.8}),
        ("Gelu", {"approximate": "tanh"}),
        ("Swish", {"alpha": 1.5}),
    ],
)
def test_unary_attributes(op, attrs):
    model, feeds = _unary(op, (5, 300), attrs, low=-4, high=4, opset=OPSET.get(op, 21))
    check_cpu(model, feeds, rtol=2e-6)


def test_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 100.0, -100.0], np.float32)
    for op in (
        "Exp",
        "Tanh",
        "Sigmoid",
        "Relu",
        "Abs",
        "Sign",
        "Erf",
        "Floor",
        "Round",
        "Gelu",
        "Softplus",
        "HardSwish",
    ):
        model = onnx_model([node(op, ["x"], ["y"])], {"x": (9,)}, {"y": (9,)}, opset=20)
        (r,), (c,) = run_both(model, {"x": x})
        np.testing.assert_allclose(c, r, rtol=1e-6, atol=1e-30, equal_nan=True)
    for attrs in ({}, {"detect_negative": 0}, {"detect_positive": 0}):
        model = onnx_model(
            [node("IsInf", ["x"], ["y"], **attrs)], {"x": (9,)}, {"y": (9,)}, dtypes={"y": np.bool_}
        )
        check_cpu(model, {"x": x})
    model = onnx_model(
        [node("IsNaN", ["x"], ["y"])], {"x": (9,)}, {"y": (9,)}, dtypes={"y": np.bool_}
    )
    check_cpu(model, {"x": x})


BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"]
SHAPES = [  # (a, b): scalar, per-channel, middle dim, both sides, same, lower rank
    ((2, 8, 5, 7), (1,)),
    ((2, 8, 5, 7), (1, 8, 1, 1)),
    ((2, 8, 5, 7), (8, 1, 7)),
    ((2, 1, 5, 7), (1, 8, 5, 1)),
    ((4, 9), (4, 9)),
    ((2, 3, 600), (600,)),
    ((3, 1), (1, 1000)),
]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary_broadcast(op, shapes):
    a_shape, b_shape = shapes
    if op == "PRelu":  # slope broadcasts to X only
        out = a_shape
        if np.broadcast_shapes(a_shape, b_shape) != tuple(a_shape):
            pytest.skip("slope does not broadcast to X")
    else:
        out = np.broadcast_shapes(a_shape, b_shape)
    model = onnx_model([node(op, ["a", "b"], ["c"])], {"a": a_shape, "b": b_shape}, {"c": out})
    low = 0.1 if op == "Pow" else -2
    check_cpu(
        model,
        {"a": rand(a_shape, 1, low=low, high=2), "b": np.asarray(rand(b_shape, 2, low=-2, high=2))},
    )


@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
def test_comparisons(op, dtype):
    a = rand((4, 50), 1, dtype, -3, 3)
    b = rand((50,), 2, dtype, -3, 3)
    if dtype == np.int64:
        a = a + (1 << 40)
        b = b + (1 << 40)
    model = onnx_model(
        [node(op, ["a", "b"], ["c"])],
        {"a": (4, 50), "b": (50,)},
        {"c": (4, 50)},
        dtypes={"a": dtype, "b": dtype, "c": np.bool_},
    )
    check_cpu(model, {"a": a, "b": b})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op):
    model = onnx_model(
        [node(op, ["a", "b"], ["t"]), node("Not", ["t"], ["c"])],
        {"a": (3, 70), "b": (3, 1)},
        {"c": (3, 70)},
        dtypes={"a": np.bool_, "b": np.bool_, "c": np.bool_, "t": np.bool_},
    )
    check_cpu(model, {"a": rand((3, 70), 1, np.bool_), "b": rand((3, 1), 2, np.bool_)})


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8])
@pytest.mark.parametrize(
    "op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Abs", "Neg", "Mod", "Mod1", "Pow"]
)
def test_integer_exact(op, dtype):
    shape = (6, 77)
    if np.dtype(dtype).kind == "u" and op in ("Neg", "Abs"):
        pytest.skip("unsigned")
    a = rand(shape, 1, dtype, 0 if np.dtype(dtype).kind == "u" else -100, 100)
    b = rand(shape, 2, dtype, 1, 9)
    if dtype == np.int64 and op in ("Add", "Sub", "Max", "Min", "Div", "Mod", "Mod1"):
        a = a * (1 << 35) + 12345
    if op in ("Div", "Mod", "Mod1") and np.dtype(dtype).kind == "i":
        b = b * np.where(rand(shape, 3, np.int64, 0, 2) == 1, -1, 1).astype(dtype)
    attrs = {}
    onnx_op = op
    if op == "Mod1":
        onnx_op, attrs = "Mod", {"fmod": 1}
    if op == "Pow":
        a = rand(shape, 1, dtype, 0 if np.dtype(dtype).kind == "u" else -5, 5)
        b = rand(shape, 2, dtype, 0, 3)
    unary = op in ("Abs", "Neg")
    inputs = ["a"] if unary else ["a", "b"]
    model = onnx_model(
        [node(onnx_op, inputs, ["c"], **attrs)],
        {k: shape for k in inputs},
        {"c": shape},
        dtypes={"a": dtype, "b": dtype, "c": dtype},
    )
    check_cpu(model, {k: v for k, v in {"a": a, "b": b}.items() if k in inputs})


def test_int_wraparound():
    a = np.array([100, -100, 127, -128, 50], np.int8)
    b = np.array([100, -100, 1, -1, 3], np.int8)
    for op in ("Add", "Sub", "Mul"):
        model = onnx_model(
            [node(op, ["a", "b"], ["c"])],
            {"a": (5,), "b": (5,)},
            {"c": (5,)},
            dtypes={"a": np.int8, "b": np.int8, "c": np.int8},
        )
        check_cpu(model, {"a": a, "b": b})


def test_float_mod():
    for fmod in (0, 1):
        model = onnx_model(
            [node("Mod", ["a", "b"], ["c"], fmod=fmod)], {"a": (400,), "b": (400,)}, {"c": (400,)}
        )
        b = rand((400,), 2, low=0.5, high=3) * np.where(rand((400,), 3) > 0, 1, -1).astype(
            np.float32
        )
        check_cpu(model, {"a": rand((400,), 1, low=-10, high=10), "b": b})


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_variadic(op):
    shapes = {"a": (2, 3, 40), "b": (3, 1), "c": (40,)}
    model = onnx_model([node(op, ["a", "b", "c"], ["y"])], shapes, {"y": (2, 3, 40)})
    check_cpu(model, {k: rand(s, i) for i, (k, s) in enumerate(shapes.items())})
    model = onnx_model([node(op, ["a"], ["y"])], {"a": (5, 6)}, {"y": (5, 6)})
    check_cpu(model, {"a": rand((5, 6))})


def test_variadic_int64():
    shapes = {"a": (3, 10), "b": (10,), "c": (3, 1)}
    types = {"a": np.int64, "b": np.int64, "c": np.int64, "y": np.int64}
    for op in ("Sum", "Max", "Min"):  # (ref's integer Mean is computed in float32)
        model = onnx_model([node(op, ["a", "b", "c"], ["y"])], shapes, {"y": (3, 10)}, dtypes=types)
        check_cpu(
            model,
            {
                k: rand(s, i, np.int64, -1000, 1000) * 1000003
                for i, (k, s) in enumerate(shapes.items())
            },
        )


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.float16])
def test_where(dtype):
    # y: a rank-0 value computed in the graph (graph inputs of rank 0 are avoided)
    model = onnx_model(
        [node("Squeeze", ["y1"], ["y"]), node("Where", ["c", "x", "y"], ["z"])],
        {"c": (4, 1, 30), "x": (5, 30), "y1": (1,)},
        {"z": (4, 5, 30)},
        dtypes={"c": np.bool_, "x": dtype, "y1": dtype, "y": dtype, "z": dtype},
    )
    x = rand((5, 30), 1, dtype, -1000, 1000)
    if dtype == np.int64:
        x = x * (1 << 40) + 7
    check_cpu(
        model, {"c": rand((4, 1, 30), 0, np.bool_), "x": x, "y1": rand((1,), 2, dtype, -9, 9)}
    )


def test_clip():
    x = rand((4, 100), 0, low=-3, high=3)
    lo, hi = np.array(-1.0, np.float32), np.array(0.5, np.float32)
    for inputs, inits in (
        (["x", "lo", "hi"], {"lo": lo, "hi": hi}),
        (["x", "lo"], {"lo": lo}),
        (["x", "", "hi"], {"hi": hi}),
        (["x"], {}),
    ):
        model = onnx_model([node("Clip", inputs, ["y"])], {"x": (4, 100)}, {"y": (4, 100)}, inits)
        check_cpu(model, {"x": x})
    model = onnx_model(
        [
            node("Squeeze", ["lo1"], ["lo"]),
            node("Squeeze", ["hi1"], ["hi"]),
            node("Clip", ["x", "lo", "hi"], ["y"]),
        ],
        {"x": (4, 100), "lo1": (1,), "hi1": (1,)},
        {"y": (4, 100)},
    )
    check_cpu(model, {"x": x, "lo1": lo.reshape(1), "hi1": hi.reshape(1)})
    xi = rand((4, 100), 0, np.int64, -50, 50)
    model = onnx_model(
        [node("Clip", ["x", "lo", "hi"], ["y"])],
        {"x": (4, 100)},
        {"y": (4, 100)},
        {"lo": np.array(-7, np.int64), "hi": np.array(20, np.int64)},
        dtypes={"x": np.int64, "y": np.int64},
    )
    check_cpu(model, {"x": xi})


CAST_TYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8, np.bool_]
_ONNX = {
    np.float32: TensorProto.FLOAT,
    np.float64: TensorProto.DOUBLE,
    np.float16: TensorProto.FLOAT16,
    np.int64: TensorProto.INT64,
    np.int32: TensorProto.INT32,
    np.int8: TensorProto.INT8,
    np.uint8: TensorProto.UINT8,
    np.bool_: TensorProto.BOOL,
}


@pytest.mark.parametrize("src", CAST_TYPES)
@pytest.mark.parametrize("dst", CAST_TYPES)
def test_cast(src, dst):
    x = rand((7, 50), 3, src, -300, 300)
    if np.dtype(src).kind == "f":
        x = (x * 1.37).astype(src)
        x.reshape(-1)[:4] = [0.5, -0.5, 2.5, -1.75]
    if src == np.int64:
        x = x * 1000003
    model = onnx_model(
        [node("Cast", ["x"], ["y"], to=_ONNX[dst])],
        {"x": (7, 50)},
        {"y": (7, 50)},
        dtypes={"x": src, "y": dst},
    )
    check_cpu(model, {"x": x}, rtol=1e-3 if np.float16 in (src, dst) else 1e-6)


def test_float16_chain():
    types = {"x": np.float16, "y": np.float16}
    model = onnx_model(
        [
            node("Mul", ["x", "x"], ["t"]),
            node("Sigmoid", ["t"], ["u"]),
            node("Add", ["u", "x"], ["y"]),
        ],
        {"x": (3, 200)},
        {"y": (3, 200)},
        dtypes=types,
    )
    check_cpu(model, {"x": rand((3, 200), 0, np.float16, -3, 3)}, rtol=2e-3, atol=1e-3)


def test_rank0_constant():
    for op in ("Add", "Div", "Pow", "Max"):
        model = onnx_model(
            [node(op, ["x", "s"], ["y"])],
            {"x": (3, 40)},
            {"y": (3, 40)},
            {"s": np.array(1.7, np.float32)},
        )
        check_cpu(model, {"x": rand((3, 40), low=0.1, high=2)})
        model = onnx_model(
            [node(op, ["s", "x"], ["y"])],
            {"x": (3, 40)},
            {"y": (3, 40)},
            {"s": np.array(1.7, np.float32)},
        )
        check_cpu(model, {"x": rand((3, 40), low=0.1, high=2)})


def test_fused_chain_with_constants():
    # Mul by a scalar, Add a per-row constant, Gelu, Sub, Div: fuse_pointwise makes one node
    bias = rand((64,), 5)
    model = onnx_model(
        [
            node("Mul", ["x", "s"], ["a"]),
            node("Add", ["a", "bias"], ["b"]),
            node("Tanh", ["b"], ["c"]),
            node("Sub", ["c", "x"], ["d"]),
            node("Div", ["d", "two"], ["e"]),
            node("Max", ["e", "b"], ["y"]),
        ],
        {"x": (4, 32, 64)},
        {"y": (4, 32, 64)},
        {"s": np.array(1.5, np.float32), "bias": bias, "two": np.array(2.0, np.float32)},
    )
    check_cpu(model, {"x": rand((4, 32, 64))})


def test_large_parallel():
    model = onnx_model(
        [
            node("Add", ["a", "b"], ["t"]),
            node("Sigmoid", ["t"], ["u"]),
            node("Mul", ["u", "a"], ["y"]),
        ],
        {"a": (8, 64, 56, 56), "b": (1, 64, 1, 1)},
        {"y": (8, 64, 56, 56)},
    )
    check_cpu(model, {"a": rand((8, 64, 56, 56)), "b": rand((1, 64, 1, 1), 1)})


def test_channels_last_input():
    # Conv output (channels-last inside the plan) feeding pointwise ops with broadcasts
    w = rand((16, 8, 3, 3), 3)
    model = onnx_model(
        [
            node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            node("Sigmoid", ["c"], ["s"]),
            node("Mul", ["s", "g"], ["m"]),
            node("ReduceMean", ["m", "axes"], ["r"], keepdims=1),
            node("Add", ["m", "r"], ["y"]),
        ],
        {"x": (2, 8, 10, 12), "g": (1, 16, 1, 1)},
        {"y": (2, 16, 10, 12)},
        {"w": w, "axes": np.array([2, 3], np.int64)},
    )
    check_cpu(model, {"x": rand((2, 8, 10, 12)), "g": rand((1, 16, 1, 1), 4)}, rtol=1e-4, atol=1e-5)


def test_pow_constant_exponents():
    for e in (2.0, 3.0, 0.5, -1.0):
        model = onnx_model(
            [node("Pow", ["x", "e"], ["y"])],
            {"x": (4, 60)},
            {"y": (4, 60)},
            {"e": np.array(e, np.float32)},
        )
        check_cpu(model, {"x": rand((4, 60), low=0.1, high=3)})


def test_channels_last_output_between_convs():
    # Conv -> pointwise ops oneDNN has no post-op for -> Conv: the pointwise result stays
    # channels-last between the two convolutions
    w1, w2 = rand((16, 8, 3, 3), 3), rand((8, 16, 1, 1), 4)
    model = onnx_model(
        [
            node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
            node("Sin", ["c"], ["s"]),
            node("Greater", ["c", "z"], ["g"]),
            node("Where", ["g", "s", "c"], ["m"]),
            node("Add", ["m", "x2"], ["a"]),
            node("Conv", ["a", "w2"], ["y"]),
        ],
        {"x": (2, 8, 9, 11), "x2": (2, 16, 9, 11)},
        {"y": (2, 8, 9, 11)},
        {"w1": w1, "w2": w2, "z": np.array(0.1, np.float32)},
    )
    check_cpu(
        model, {"x": rand((2, 8, 9, 11)), "x2": rand((2, 16, 9, 11), 5)}, rtol=1e-4, atol=1e-5
    )


def test_empty_tensors():
    model = onnx_model(
        [node("Add", ["a", "b"], ["t"]), node("Exp", ["t"], ["y"])],
        {"a": (3, 0, 4), "b": (4,)},
        {"y": (3, 0, 4)},
    )
    check_cpu(model, {"a": np.zeros((3, 0, 4), np.float32), "b": rand((4,))})
