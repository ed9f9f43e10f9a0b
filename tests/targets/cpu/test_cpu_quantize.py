# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""QuantizeLinear / DequantizeLinear (per tensor, per axis, blocked; i8 u8 i16 u16 i32 u32)
and DynamicQuantizeLinear on cpu against ref."""

import numpy as np
import pytest
from onnx import helper, numpy_helper

from cpu_testing import check_cpu, node, rand

QTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]


def _model(nodes, inputs, outputs, inits=None, opset=21):
    def info(name, spec):
        shape, dtype = spec
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape
        )

    graph = helper.make_graph(
        nodes,
        "t",
        [info(k, v) for k, v in inputs.items()],
        [info(k, v) for k, v in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)]
    ).SerializeToString()


def _zero_points(shape, dtype, seed):
    info = np.iinfo(dtype)
    low, high = max(info.min, -100), min(info.max, 100)
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(dtype)


# (x shape, param shape, axis, block_size)
LAYOUTS = [
    ((3, 4, 5), (), 1, 0),
    ((3, 4, 5), (4,), 1, 0),
    ((3, 4, 5), (5,), -1, 0),
    ((3, 4, 5), (3,), 0, 0),
    ((3, 8, 5), (3, 3, 5), 1, 3),
    ((6, 4), (2, 4), 0, 3),
    ((4, 7), (4, 2), 1, 4),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize("with_zero", [True, False])
def test_quantize(layout, dtype, with_zero):
    x_shape, p_shape, axis, block = layout
    scale = rand(p_shape, seed=7, low=0.001, high=0.05)
    x = rand(x_shape, seed=8, low=-4, high=4)
    inputs = {"x": (x_shape, np.float32), "s": (p_shape, np.float32)}
    names, feeds = ["x", "s"], {"x": x, "s": scale}
    attrs = {"axis": axis, "block_size": block}
    if with_zero:
        inputs["z"] = (p_shape, dtype)
        names.append("z")
        feeds["z"] = _zero_points(p_shape, dtype, 9)
    else:
        attrs["output_dtype"] = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = _model(
        [node("QuantizeLinear", names, ["y"], **attrs)], inputs, {"y": (x_shape, dtype)}, opset=24
    )
    check_cpu(model, feeds)


def test_quantize_default_uint8_saturates():
    x = rand((5, 6), seed=10, low=-300, high=300)
    model = _model(
        [node("QuantizeLinear", ["x", "s"], ["y"])],
        {"x": ((5, 6), np.float32)},
        {"y": ((5, 6), np.uint8)},
        {"s": np.array(0.5, np.float32)},
    )
    check_cpu(model, {"x": x})


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize("with_zero", [True, False])
def test_dequantize(layout, dtype, with_zero):
    x_shape, p_shape, axis, block = layout
    info = np.iinfo(dtype)
    x = (
        np.random.default_rng(11)
        .integers(max(info.min, -(2**20)), min(info.max, 2**20), size=x_shape)
        .astype(dtype)
    )
    scale = rand(p_shape, seed=12, low=0.001, high=0.05)
    inputs = {"x": (x_shape, dtype), "s": (p_shape, np.float32)}
    names, feeds = ["x", "s"], {"x": x, "s": scale}
    if with_zero:
        inputs["z"] = (p_shape, dtype)
        names.append("z")
        feeds["z"] = _zero_points(p_shape, dtype, 13)
    model = _model(
        [node("DequantizeLinear", names, ["y"], axis=axis, block_size=block)],
        inputs,
        {"y": (x_shape, np.float32)},
        opset=24,
    )
    check_cpu(model, feeds, rtol=1e-6, atol=0)


@pytest.mark.parametrize("low,high", [(-2.0, 3.0), (0.5, 4.0), (-5.0, -1.0), (0.0, 0.0)])
def test_dynamic_quantize(low, high):
    x = (
        rand((40, 33), seed=14, low=low, high=high)
        if high > low
        else np.zeros((40, 33), np.float32)
    )
    model = _model(
        [node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
        {"x": ((40, 33), np.float32)},
        {"y": ((40, 33), np.uint8), "s": ((), np.float32), "z": ((), np.uint8)},
    )
    check_cpu(model, {"x": x}, rtol=0, atol=0)


def test_quantize_refuses_half_scale():
    import graphkiln as gk

    model = _model(
        [node("QuantizeLinear", ["x", "s"], ["y"])],
        {"x": ((2, 3), np.float16), "s": ((), np.float16)},
        {"y": ((2, 3), np.uint8)},
    )
    with pytest.raises(Exception, match="QuantizeLinear"):
        gk.parse_onnx_buffer(model).compile("cpu")


# -- one-byte quantized types (float8, float4e2m1, int4, uint4, int2, uint2) --------------

import ml_dtypes  # noqa: E402

from graphkiln.ir import DType  # noqa: E402

from cpu_testing import run_both  # noqa: E402

BYTE_TYPES = [
    DType.f8e4m3fn,
    DType.f8e4m3fnuz,
    DType.f8e5m2,
    DType.f8e5m2fnuz,
    DType.f4e2m1,
    DType.i4,
    DType.u4,
    DType.i2,
    DType.u2,
]


def _byte_model(op, x_type, p_shape, x_shape, y_type, with_zero, zp_type, **attrs):
    names = ["x", "s"] + (["z"] if with_zero else [])
    ins = [
        helper.make_tensor_value_info("x", x_type.onnx, x_shape),
        helper.make_tensor_value_info("s", DType.f32.onnx, p_shape),
    ]
    if with_zero:
        ins.append(helper.make_tensor_value_info("z", zp_type.onnx, p_shape))
    graph = helper.make_graph(
        [node(op, names, ["y"], **attrs)],
        "t",
        ins,
        [helper.make_tensor_value_info("y", y_type.onnx, x_shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)]).SerializeToString()


def _byte_values(dtype: DType, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype in (DType.i4, DType.u4, DType.i2, DType.u2):
        info = ml_dtypes.iinfo(dtype.numpy)
        return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype.numpy)
    values = rng.normal(0, 2, size=shape).astype(np.float32)
    return values.astype(dtype.numpy)


def _same_bits(model, feeds):
    ref, cpu = run_both(model, feeds)
    r, c = np.asarray(ref[0]), np.asarray(cpu[0])
    assert r.dtype == c.dtype and r.shape == c.shape
    if r.dtype.itemsize == 1:
        np.testing.assert_array_equal(c.view(np.uint8), r.view(np.uint8))
    else:
        np.testing.assert_allclose(c, r, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", BYTE_TYPES)
@pytest.mark.parametrize("layout", [LAYOUTS[0], LAYOUTS[1], LAYOUTS[4]])
@pytest.mark.parametrize("with_zero", [True, False])
@pytest.mark.parametrize("saturate", [1, 0])
def test_quantize_byte_types(dtype, layout, with_zero, saturate):
    x_shape, p_shape, axis, block = layout
    x = rand(x_shape, seed=20, low=-40, high=40)
    x.reshape(-1)[:3] = [1e9, -1e9, np.nan]
    scale = rand(p_shape, seed=21, low=0.05, high=0.5)
    feeds = {"x": x, "s": scale}
    attrs = {"axis": axis, "block_size": block}
    if dtype in (DType.f8e4m3fn, DType.f8e4m3fnuz, DType.f8e5m2, DType.f8e5m2fnuz):
        attrs["saturate"] = saturate
    elif saturate == 0:
        pytest.skip("saturate applies to float8 only")
    if with_zero:
        zp = _byte_values(dtype, p_shape, 22)
        if dtype.is_float:
            zp = np.zeros(p_shape, dtype.numpy)  # ONNX: float8 zero points are 0
        feeds["z"] = zp
    else:
        attrs["output_dtype"] = dtype.onnx
    model = _byte_model(
        "QuantizeLinear", DType.f32, p_shape, x_shape, dtype, with_zero, dtype, **attrs
    )
    _same_bits(model, feeds)


@pytest.mark.parametrize("dtype", BYTE_TYPES)
@pytest.mark.parametrize("layout", [LAYOUTS[0], LAYOUTS[2], LAYOUTS[5]])
@pytest.mark.parametrize("with_zero", [True, False])
def test_dequantize_byte_types(dtype, layout, with_zero):
    x_shape, p_shape, axis, block = layout
    feeds = {"x": _byte_values(dtype, x_shape, 23), "s": rand(p_shape, seed=24, low=0.01, high=2)}
    if with_zero:
        feeds["z"] = _byte_values(dtype, p_shape, 25)
    model = _byte_model(
        "DequantizeLinear",
        dtype,
        p_shape,
        x_shape,
        DType.f32,
        with_zero,
        dtype,
        axis=axis,
        block_size=block,
    )
    _same_bits(model, feeds)


@pytest.mark.parametrize("dtype", [DType.i4, DType.f8e4m3fn, DType.u8])
def test_quantize_scalar_scale_one_element_zero_point(dtype):
    # ONNX's examples: scale of shape (), zero point of shape (1,)
    x = rand((5,), seed=26, low=-3, high=3)
    zp = np.zeros((1,), dtype.numpy)
    ins = [
        helper.make_tensor_value_info("x", DType.f32.onnx, (5,)),
        helper.make_tensor_value_info("s", DType.f32.onnx, ()),
        helper.make_tensor_value_info("z", dtype.onnx, (1,)),
    ]
    graph = helper.make_graph(
        [
            node("QuantizeLinear", ["x", "s", "z"], ["q"]),
            node("DequantizeLinear", ["q", "s", "z"], ["y"]),
        ],
        "t",
        ins,
        [helper.make_tensor_value_info("y", DType.f32.onnx, (5,))],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 25)]
    ).SerializeToString()
    _same_bits(model, {"x": x, "s": np.array(0.25, np.float32), "z": zp})
