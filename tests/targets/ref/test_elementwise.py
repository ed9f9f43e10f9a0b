# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of unary / binary math, comparisons, logic, bitwise, variadic ops, Where, Clip."""

import math

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import random_array, run_op


# (op, numpy reference, input range)
UNARY = [
    ("Abs", np.abs, (-3, 3)),
    ("Neg", lambda x: -x, (-3, 3)),
    ("Exp", np.exp, (-3, 3)),
    ("Log", np.log, (0.1, 5)),
    ("Sqrt", np.sqrt, (0.1, 5)),
    ("Reciprocal", lambda x: 1 / x, (0.5, 5)),
    ("Floor", np.floor, (-3, 3)),
    ("Ceil", np.ceil, (-3, 3)),
    ("Sin", np.sin, (-3, 3)),
    ("Cos", np.cos, (-3, 3)),
    ("Tan", np.tan, (-1, 1)),
    ("Asin", np.arcsin, (-0.9, 0.9)),
    ("Acos", np.arccos, (-0.9, 0.9)),
    ("Atan", np.arctan, (-3, 3)),
    ("Sinh", np.sinh, (-3, 3)),
    ("Cosh", np.cosh, (-3, 3)),
    ("Asinh", np.arcsinh, (-3, 3)),
    ("Acosh", np.arccosh, (1.1, 5)),
    ("Atanh", np.arctanh, (-0.9, 0.9)),
    ("Sign", np.sign, (-3, 3)),
]


@pytest.mark.parametrize("op,reference,bounds", UNARY, ids=[u[0] for u in UNARY])
def test_unary_math_matches_numpy(op, reference, bounds):
    x = random_array((3, 4), len(op), low=bounds[0], high=bounds[1])
    y = run_op(op, [x])
    assert y.dtype == np.float32 and y.shape == (3, 4)
    np.testing.assert_allclose(y, reference(x.astype(np.float64)), rtol=1e-6, atol=1e-6)


def test_round_halves_to_even_and_narrow_floats_keep_their_dtype():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.3, -2.7], np.float32)
    np.testing.assert_array_equal(run_op("Round", [x]), [0, 2, 2, -0.0, -2, 2, -3])
    h = random_array((5,), 3, dtype=np.float16, low=0.1, high=4)
    y = run_op("Exp", [h])
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float64), np.exp(h.astype(np.float64)), rtol=1e-3)
    b = np.array([4.0, 9.0, 2.0], ml_dtypes.bfloat16)
    assert run_op("Sqrt", [b]).dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(
        run_op("Sqrt", [b]).astype(np.float64), [2, 3, math.sqrt(2)], rtol=1e-2
    )


def test_erf_matches_numeric_integral():
    x = random_array((7,), 5, dtype=np.float64, low=-2.5, high=2.5)
    t = np.linspace(0, 1, 4001)
    # erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt, with t scaled to [0, x]
    # the trapezoid rule written out (np.trapezoid is numpy 2's name, np.trapz numpy 1's)
    f = np.exp(-((t[None, :] * x[:, None]) ** 2))
    integral = ((f[:, 1:] + f[:, :-1]) / 2 * np.diff(t)).sum(axis=1) * x
    np.testing.assert_allclose(run_op("Erf", [x]), 2 / np.sqrt(np.pi) * integral, rtol=1e-6)


def test_isnan_isinf_not_bitwise_not():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0], np.float32)
    np.testing.assert_array_equal(run_op("IsNaN", [x]), [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(run_op("IsInf", [x]), [0, 0, 1, 1, 0])
    np.testing.assert_array_equal(run_op("IsInf", [x], detect_negative=0), [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(run_op("IsInf", [x], detect_positive=0), [0, 0, 0, 1, 0])
    np.testing.assert_array_equal(run_op("Not", [np.array([True, False])]), [False, True])
    u = np.array([0, 5, 255], np.uint8)
    np.testing.assert_array_equal(run_op("BitwiseNot", [u]), [255, 250, 0])


def test_float_arithmetic_broadcasts():
    a, b = random_array((2, 3, 4), 1, low=-3.0, high=3.0), random_array((3, 1), 2, low=0.5, high=2)
    for op, reference in (("Add", a + b), ("Sub", a - b), ("Mul", a * b), ("Div", a / b)):
        y = run_op(op, [a, b])
        assert y.shape == (2, 3, 4)
        np.testing.assert_allclose(y, reference, rtol=1e-6)


def test_integer_division_truncates_toward_zero():
    rng = np.random.default_rng(7)
    a = rng.integers(-50, 50, 40).astype(np.int32)
    b = rng.integers(1, 9, 40).astype(np.int32) * rng.choice([-1, 1], 40).astype(np.int32)
    expected = [int(x / y) for x, y in zip(a.tolist(), b.tolist())]
    y = run_op("Div", [a, b])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, expected)


def test_mod_sign_follows_divisor_or_dividend():
    rng = np.random.default_rng(8)
    a = rng.integers(-30, 30, 30).astype(np.int64)
    b = rng.integers(1, 7, 30) * rng.choice([-1, 1], 30)
    floor_mod = [x % y for x, y in zip(a.tolist(), b.tolist())]
    trunc_mod = [int(math.fmod(x, y)) for x, y in zip(a.tolist(), b.tolist())]
    np.testing.assert_array_equal(run_op("Mod", [a, b.astype(np.int64)]), floor_mod)
    np.testing.assert_array_equal(run_op("Mod", [a, b.astype(np.int64)], fmod=1), trunc_mod)
    f, g = random_array((6,), 9, low=-5, high=5), random_array((6,), 10, low=0.5, high=2)
    np.testing.assert_allclose(
        run_op("Mod", [f, g], fmod=1),
        [math.fmod(x, y) for x, y in zip(f.tolist(), g.tolist())],
        rtol=1e-5,
    )


def test_pow_keeps_the_base_dtype_with_any_exponent_dtype():
    base = np.array([1, 2, 3, -2], np.int32)
    y = run_op("Pow", [base, np.array([4.0, 5.0, 2.0, 3.0], np.float32)])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [1, 32, 9, -8])
    x = random_array((4,), 11, low=0.5, high=2)
    y = run_op("Pow", [x, np.array([2, 3, -1, 0], np.int64)])
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, [x[0] ** 2, x[1] ** 3, 1 / x[2], 1.0], rtol=1e-6)


def test_bitshift_including_out_of_range_amounts():
    x = np.array([1, 4, -16, -1, 3], np.int8)
    y = np.array([1, 1, 2, 9, -1], np.int8)
    np.testing.assert_array_equal(run_op("BitShift", [x, y], direction="RIGHT"), [0, 2, -4, -1, 0])
    np.testing.assert_array_equal(run_op("BitShift", [x, y], direction="LEFT"), [2, 8, -64, 0, 0])
    u = np.array([1, 2, 255], np.uint16)
    np.testing.assert_array_equal(
        run_op("BitShift", [u, np.array([3, 16, 4], np.uint16)], direction="LEFT"), [8, 0, 4080]
    )


def test_bitwise_and_logic():
    rng = np.random.default_rng(12)
    a, b = rng.integers(0, 256, 10).astype(np.uint8), rng.integers(0, 256, 10).astype(np.uint8)
    np.testing.assert_array_equal(run_op("BitwiseAnd", [a, b]), a & b)
    np.testing.assert_array_equal(run_op("BitwiseOr", [a, b]), a | b)
    np.testing.assert_array_equal(run_op("BitwiseXor", [a, b]), a ^ b)
    p, q = a > 100, b > 100
    np.testing.assert_array_equal(run_op("And", [p, q]), [x and y for x, y in zip(p, q)])
    np.testing.assert_array_equal(run_op("Or", [p, q]), [x or y for x, y in zip(p, q)])
    np.testing.assert_array_equal(run_op("Xor", [p, q]), [x != y for x, y in zip(p, q)])


def test_comparisons_give_bool():
    a, b = random_array((3, 4), 13, low=-3.0, high=3.0), random_array((4,), 14, low=-3.0, high=3.0)
    for op, fn in (
        ("Equal", np.equal),
        ("Less", np.less),
        ("LessOrEqual", np.less_equal),
        ("Greater", np.greater),
        ("GreaterOrEqual", np.greater_equal),
    ):
        y = run_op(op, [a, b])
        assert y.dtype == np.bool_
        np.testing.assert_array_equal(y, fn(a, b))
    np.testing.assert_array_equal(run_op("Equal", [a, a]), np.ones((3, 4), bool))
    words = np.array(["a", "bc", "d"], dtype=object)
    np.testing.assert_array_equal(
        run_op("Equal", [words, np.array(["a"], dtype=object)]), [1, 0, 0]
    )


def test_variadic_ops_broadcast_every_input():
    a = random_array((2, 3), 15, low=-3.0, high=3.0)
    b = random_array((3,), 16, low=-3.0, high=3.0)
    c = random_array((2, 1), 17, low=-3.0, high=3.0)
    np.testing.assert_allclose(run_op("Sum", [a, b, c]), a + b + c, rtol=1e-6)
    np.testing.assert_allclose(run_op("Mean", [a, b, c]), (a + b + c) / 3, rtol=1e-6)
    np.testing.assert_array_equal(run_op("Max", [a, b, c]), np.maximum(np.maximum(a, b), c))
    np.testing.assert_array_equal(run_op("Min", [a, b, c]), np.minimum(np.minimum(a, b), c))
    np.testing.assert_array_equal(run_op("Max", [a]), a)


def test_where_and_clip():
    cond = np.array([[True], [False]])
    x, y = random_array((2, 3), 18, low=-3.0, high=3.0), random_array((3,), 19, low=-3.0, high=3.0)
    np.testing.assert_array_equal(run_op("Where", [cond, x, y]), np.where(cond, x, y))
    v = random_array((10,), 20, low=-5, high=5)
    lo, hi = np.array(-1, np.float32), np.array(2, np.float32)
    np.testing.assert_array_equal(run_op("Clip", [v, lo, hi]), np.minimum(np.maximum(v, -1), 2))
    np.testing.assert_array_equal(run_op("Clip", [v, None, hi]), np.minimum(v, 2))
    np.testing.assert_array_equal(run_op("Clip", [v, lo]), np.maximum(v, -1))
    np.testing.assert_array_equal(run_op("Clip", [v, hi, lo]), np.full(10, -1, np.float32))
    i = np.array([-9, 0, 9], np.int8)
    y = run_op("Clip", [i, np.array(-2, np.int8), np.array(3, np.int8)])
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, [-2, 0, 3])


def test_shape_inference_with_symbolic_and_unknown_dims():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, ("N", 1)))
    w = g.add_input("w", TensorType(DType.f32, (3,)))
    c = g.add_input("c", TensorType(DType.bool, (1, 3)))
    assert g.add("Add", x, w).type == TensorType(DType.f32, ("N", 3))
    assert g.add("Less", x, w).type == TensorType(DType.bool, ("N", 3))
    assert g.add("Where", c, x, w).type == TensorType(DType.f32, ("N", 3))
    assert g.add("Sum", x, w, x).type == TensorType(DType.f32, ("N", 3))
    u = g.add_input("u", TensorType(DType.f16, None))
    assert g.add("Exp", u).type == TensorType(DType.f16, None)
    assert g.add("IsNaN", u).type == TensorType(DType.bool, None)
    assert g.add("Mul", u, u).type == TensorType(DType.f16, None)
    assert g.add("Clip", u).type == TensorType(DType.f16, None)


def test_old_clip_attributes_become_inputs():
    model = make_model(
        [
            helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25),
            helper.make_node("Clip", ["x"], ["z"], max=0.0),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [6]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [6]),
        ],
        opset=10,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    clips = [n for n in prog.graph.nodes if n.op == "Clip"]
    assert [len(n.inputs) for n in clips] == [3, 3] and clips[1].inputs[1] is None
    x = random_array((6,), 21, low=-2, high=2)
    y, z = prog.compile("ref").run({"x": x})
    np.testing.assert_array_equal(y, np.clip(x, -0.5, 0.25))
    np.testing.assert_array_equal(z, np.minimum(x, 0))
