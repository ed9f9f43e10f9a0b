# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear."""

from functools import partial

import ml_dtypes
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
def x():
    return np.random.default_rng(41).uniform(-4, 4, (3, 8)).astype(np.float32)


def _round_half_even(v):
    down = np.floor(v)
    frac = v - down
    odd = np.mod(down, 2) == 1
    return np.where((frac > 0.5) | ((frac == 0.5) & odd), down + 1, down)


def test_quantize_per_tensor_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 300.0, -300.0, 1.2], np.float32)
    got = run_op("QuantizeLinear", [x, np.array(1.0, np.float32), np.array(3, np.int8)])
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [3, 5, 5, 3, 1, 127, -128, 4])
    # no zero point: uint8
    assert run_op("QuantizeLinear", [x, np.array(2.0, np.float32)]).dtype == np.uint8


def test_quantize_per_axis_and_blocked(x):
    scale = np.array([0.1, 0.2, 0.5], np.float32)
    zero = np.array([0, 10, 250], np.uint8)
    got = run_op("QuantizeLinear", [x, scale, zero], axis=0)
    want = np.clip(_round_half_even(x / scale[:, None]) + zero[:, None], 0, 255)
    np.testing.assert_array_equal(got, want)
    # blocks of 3 along axis 1 (8 = 3 + 3 + 2): scale shape [3, ceil(8 / 3)]
    block_scale = np.random.default_rng(42).uniform(0.05, 0.5, (3, 3)).astype(np.float32)
    got = run_op(
        "QuantizeLinear", [x, block_scale, np.zeros((3, 3), np.int8)], axis=1, block_size=3
    )
    per_element = np.repeat(block_scale, 3, axis=1)[:, :8]
    np.testing.assert_array_equal(got, np.clip(_round_half_even(x / per_element), -128, 127))
    back = run_op("DequantizeLinear", [got, block_scale, None], axis=1, block_size=3)
    np.testing.assert_allclose(back, got.astype(np.float32) * per_element, rtol=1e-6)


def test_quantize_to_4_bit_and_float8(x):
    got = run_op("QuantizeLinear", [x, np.array(0.5, np.float32), np.array(1, ml_dtypes.int4)])
    assert got.dtype == ml_dtypes.int4
    np.testing.assert_array_equal(
        got.astype(np.int32), np.clip(_round_half_even(x / 0.5) + 1, -8, 7)
    )
    big = np.array([1.0, 500.0, -1e6, np.nan], np.float32)
    f8 = run_op(
        "QuantizeLinear", [big, np.array(1.0, np.float32), np.zeros((), ml_dtypes.float8_e4m3fn)]
    )
    np.testing.assert_array_equal(f8.astype(np.float32)[:3], [1.0, 448.0, -448.0])
    assert np.isnan(f8.astype(np.float32)[3])
    f8 = run_op(
        "QuantizeLinear", [big, np.array(1.0, np.float32)], saturate=0, output_dtype=DType.f8e5m2
    )
    assert f8.dtype == ml_dtypes.float8_e5m2 and np.isinf(f8.astype(np.float32)[2])


def test_dequantize_per_axis_int32_and_output_dtype():
    q = np.random.default_rng(43).integers(0, 255, (2, 3, 4)).astype(np.uint8)
    scale = np.array([0.5, 0.25, 2.0], np.float32)
    zero = np.array([128, 0, 3], np.uint8)
    got = run_op("DequantizeLinear", [q, scale, zero], axis=1)
    want = (q.astype(np.float64) - zero[None, :, None]) * scale[None, :, None]
    np.testing.assert_array_equal(got, want.astype(np.float32))
    acc = np.array([-70000, 5, 123456], np.int32)
    got = run_op("DequantizeLinear", [acc, np.array(0.001, np.float32)], output_dtype=DType.f16)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, acc * 0.001, rtol=1e-3)


def test_dynamic_quantize_linear():
    x = np.random.default_rng(44).uniform(-1, 3, (4, 5)).astype(np.float32)
    y, scale, zero = run_op("DynamicQuantizeLinear", [x], num_outputs=3)
    low, high = min(0.0, x.min()), max(0.0, x.max())
    want_scale = np.float32((high - low) / 255)
    assert scale == want_scale
    assert zero == np.uint8(_round_half_even(np.float32(-low / want_scale)))
    np.testing.assert_array_equal(y, np.clip(_round_half_even(x / want_scale) + zero, 0, 255))
    y, scale, zero = run_op("DynamicQuantizeLinear", [np.zeros((2,), np.float32)], num_outputs=3)
    assert scale == 0 and zero == 0 and not y.any()


def test_inference():
    g = Graph()
    x = g.add_input("x", TensorType(DType.bf16, ("N", 4)))
    scale = g.add_input("s", TensorType(DType.bf16, ()))
    assert g.add("QuantizeLinear", x, scale).type == TensorType(DType.u8, ("N", 4))
    q = g.add("QuantizeLinear", x, scale, output_dtype=DType.i4)
    assert q.type == TensorType(DType.i4, ("N", 4))
    assert g.add("DequantizeLinear", q, scale).type == TensorType(DType.bf16, ("N", 4))
    assert g.add("DequantizeLinear", q, scale, output_dtype=DType.f32).type.dtype is DType.f32
    y, s, z = g.add_node(
        "DynamicQuantizeLinear", [g.add_input("f", TensorType(DType.f32, None))], {}, 3
    ).outputs
    assert (y.type.dims, s.type, z.type) == (
        None,
        TensorType(DType.f32, ()),
        TensorType(DType.u8, ()),
    )


def test_import_maps_output_dtype_codes_and_opset_10_form(x):
    model = make_model(
        [
            helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=TensorProto.INT8),
            helper.make_node("DequantizeLinear", ["q", "s"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [0.05])],
        opset=21,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    quantize = next(n for n in prog.graph.nodes if n.op == "QuantizeLinear")
    assert quantize.attrs["output_dtype"] is DType.i8
    (y,) = prog.compile("ref").run({"x": x})
    np.testing.assert_allclose(y, np.clip(_round_half_even(x / 0.05), -128, 127) * 0.05, rtol=1e-6)
    old = make_model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("q", TensorProto.UINT8, None)],
        [
            helper.make_tensor("s", TensorProto.FLOAT, [], [0.05]),
            helper.make_tensor("z", TensorProto.UINT8, [], [128]),
        ],
        opset=10,
    )
    (q,) = graphkiln.parse_onnx_buffer(old.SerializeToString()).compile("ref").run({"x": x})
    np.testing.assert_array_equal(q, np.clip(_round_half_even(x / np.float32(0.05)) + 128, 0, 255))
