# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of Cast, CastLike and BitCast: numeric rules, float8 / e8m0 / sub-byte, strings."""

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.errors import GraphError
from graphkiln.ir import DType, Graph, TensorType
from op_testing import run_op


def cast(x, to, **attrs):
    return run_op("Cast", [x], to=to, **attrs)


def test_float_to_int_truncates_and_int_to_int_wraps():
    x = np.random.default_rng(0).uniform(-100, 100, 20).astype(np.float32)
    y = cast(x, DType.i32)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [int(v) for v in x.tolist()])
    np.testing.assert_array_equal(
        cast(np.array([200, -200, 127], np.int16), DType.i8), [200 - 256, -200 + 256, 127]
    )
    np.testing.assert_array_equal(cast(np.array([-1, 256], np.int32), DType.u8), [255, 0])


def test_bool_conversions():
    x = np.array([0.0, -0.0, 0.5, np.nan, -3.0], np.float32)
    np.testing.assert_array_equal(cast(x, DType.bool), [False, False, True, True, True])
    b = np.array([True, False])
    assert cast(b, DType.f16).tolist() == [1.0, 0.0] and cast(b, DType.i64).tolist() == [1, 0]


def test_float_narrowing_rounds_to_nearest_even():
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1e30, -1e30], np.float32)
    y = cast(x, DType.bf16)
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32)[:2], [1.0, 1 + 2**-6])
    np.testing.assert_array_equal(
        cast(np.array([1e6, -1e6], np.float64), DType.f16), [np.inf, -np.inf]
    )


def test_float8_saturate_clamps_and_no_saturate_overflows():
    x = np.array([1e6, -1e6, np.inf, -np.inf, np.nan, 0.46, 1e-9], np.float32)
    sat = cast(x, DType.f8e4m3fn).astype(np.float32)
    np.testing.assert_array_equal(sat, [448, -448, 448, -448, np.nan, 0.46875, 0])
    raw = cast(x, DType.f8e4m3fn, saturate=0).astype(np.float32)
    assert np.isnan(raw[:5]).all() and raw[5] == 0.46875
    e5 = cast(x, DType.f8e5m2, saturate=0).astype(np.float32)
    np.testing.assert_array_equal(e5[:4], [np.inf, -np.inf, np.inf, -np.inf])
    assert cast(x, DType.f8e5m2fnuz).astype(np.float32)[0] == 57344
    assert (
        np.signbit(cast(np.array([-0.0], np.float32), DType.f8e4m3fnuz).astype(np.float32)[0]) == 0
    )


@pytest.mark.parametrize(
    "mode,expected",
    [
        ("up", [0.125, 2, 4, 2, 1, 2**-127, 2**127]),
        ("down", [0.0625, 1, 2, 1, 1, 2**-127, 2**127]),
        ("nearest", [0.125, 1, 4, 2, 1, 2**-127, 2**127]),
    ],
)
def test_e8m0_round_modes_with_saturation(mode, expected):
    x = np.array([0.124, 1.1, 3.0, 1.5, 1.0, 0.0, np.inf], np.float32)
    y = cast(x, DType.f8e8m0, round_mode=mode)
    assert y.dtype == ml_dtypes.float8_e8m0fnu
    np.testing.assert_array_equal(y.astype(np.float64), expected)
    no_sat = cast(x, DType.f8e8m0, round_mode=mode, saturate=0).astype(np.float32)
    assert np.isnan(no_sat[5:]).all()


def test_sub_byte_integers_wrap():
    x = np.array([-9, -8, 7, 8, 15, 2.7], np.float32)
    np.testing.assert_array_equal(cast(x, DType.i4).astype(np.int8), [7, -8, 7, -8, -1, 2])
    np.testing.assert_array_equal(cast(x, DType.u4).astype(np.uint8), [7, 8, 7, 8, 15, 2])
    np.testing.assert_array_equal(
        cast(np.array([-3, 2, 5], np.int8), DType.u2).astype(np.uint8), [1, 2, 1]
    )
    back = cast(np.array([-8, 7], ml_dtypes.int4), DType.f32)
    np.testing.assert_array_equal(back, [-8.0, 7.0])


def test_strings_parse_and_format():
    text = np.array(["3.5", "1e-5", "-2E3", "INF", "+inf", "-INF", "NaN", "  7 "], dtype=object)
    y = cast(text, DType.f32)
    np.testing.assert_array_equal(
        y, np.array([3.5, 1e-5, -2000, np.inf, np.inf, -np.inf, np.nan, 7], np.float32)
    )
    np.testing.assert_array_equal(
        cast(np.array(["100.5", "-3", "9007199254740993"], dtype=object), DType.i64),
        [100, -3, 9007199254740993],
    )
    x = np.random.default_rng(1).standard_normal(10).astype(np.float32)
    as_text = cast(x, DType.str)
    assert as_text.dtype == object and all(isinstance(s, str) and "e" not in s for s in as_text)
    np.testing.assert_array_equal(cast(as_text, DType.f32), x)  # shortest digits read back exactly
    assert cast(np.array([np.inf, -np.inf, np.nan], np.float32), DType.str).tolist() == [
        "INF",
        "-INF",
        "NaN",
    ]
    assert cast(np.array([-5, 12], np.int64), DType.str).tolist() == ["-5", "12"]


def test_castlike_takes_the_dtype_of_its_second_input():
    x = np.random.default_rng(2).uniform(-3, 3, (2, 3)).astype(np.float64)
    y = run_op("CastLike", [x, np.zeros((1,), np.float16)])
    assert y.dtype == np.float16 and y.shape == (2, 3)
    np.testing.assert_allclose(y.astype(np.float64), x, rtol=1e-3)
    z = run_op("CastLike", [x, np.zeros((1,), ml_dtypes.float8_e4m3fn)], saturate=0)
    assert z.dtype == ml_dtypes.float8_e4m3fn


def test_bitcast_reinterprets_bits():
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    y = run_op("BitCast", [x], to=DType.i32)
    np.testing.assert_array_equal(y, np.frombuffer(x.tobytes(), np.int32).reshape(2, 3))
    s = run_op("BitCast", [np.array(1.0, np.float32)], to=DType.u32)
    assert s.shape == () and int(s) == 0x3F800000
    np.testing.assert_array_equal(
        run_op("BitCast", [np.array([-1, 7], ml_dtypes.int4)], to=DType.u4).astype(np.uint8),
        [15, 7],
    )


def test_type_inference():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, ("N", 2)))
    t = g.add_input("t", TensorType(DType.i8, (1,)))
    assert g.add("Cast", x, to=DType.f16).type == TensorType(DType.f16, ("N", 2))
    assert g.add("CastLike", x, t).type == TensorType(DType.i8, ("N", 2))
    assert g.add("BitCast", x, to=DType.u32).type == TensorType(DType.u32, ("N", 2))
    with pytest.raises(GraphError, match="bit width"):
        g.add("BitCast", x, to=DType.f16)


def test_import_converts_the_onnx_type_code():
    model = make_model(
        [
            helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT8E5M2, saturate=0),
            helper.make_node("Cast", ["h"], ["y"], to=TensorProto.DOUBLE),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3])],
        opset=19,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    casts = [n for n in prog.graph.nodes if n.op == "Cast"]
    assert [n.attrs["to"] for n in casts] == [DType.f8e5m2, DType.f64]
    assert casts[0].attrs["saturate"] == 0
    (y,) = prog.compile("ref").run({"x": np.array([1e6, 1.0, 0.3], np.float32)})
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, [np.inf, 1.0, 0.3125])
