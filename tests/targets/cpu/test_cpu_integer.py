# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu target's integer products (targets/native/lower_integer.py, src/cpu/int_matmul.cpp,
int_conv.cpp) against ref, bit-exact: MatMulInteger / QLinearMatMul (i8 / u8 and mixed, zero
points and scales per tensor / row / column / batch, 1-D, 2-D, batched and broadcast shapes,
float16 scales, saturation at both ends, ties of round half to even) and ConvInteger /
QLinearConv (pads, strides, dilations, groups, depthwise, auto_pad, 1 to 3 spatial dims,
per-channel w_scale / w_zero_point, bias); what the kernels refuse goes to fallback."""

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model

I8, U8 = np.int8, np.uint8


def exact(model, feeds):
    return check_cpu(model, feeds, rtol=0, atol=0)


def ints(shape, seed, dtype):
    """Seeded values over the whole range of an 8-bit type (both ends included)."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(int(info.min), int(info.max) + 1, size=shape)
    flat = x.reshape(-1)
    if flat.size >= 2:
        flat[0], flat[-1] = info.min, info.max
    return x.astype(dtype)


def scales(shape, seed, dtype=np.float32, low=0.001, high=0.02):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def build(op, names, feeds, attrs=None, constants=()):
    """A one-node model of `op` over inputs `names` ('' for an absent one); the feeds named in
    `constants` become initializers."""
    inputs = {n: feeds[n].shape for n in names if n and n not in constants}
    inits = {n: feeds[n] for n in constants}
    dtypes = {n: feeds[n].dtype for n in names if n}
    model = onnx_model(
        [node(op, list(names), ["y"], **(attrs or {}))],
        inputs,
        {"y": None},
        inits,
        dtypes={**dtypes, "y": np.int32},
    )
    return model, {n: feeds[n] for n in inputs}


def ref_run(model, feeds):
    return gk.parse_onnx_buffer(model).compile("ref").run(feeds)[0]


# -- MatMulInteger ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((4, 3), (3, 5)),
        ((7, 33), (33, 19)),
        ((2, 5, 6), (2, 6, 4)),
        ((3, 1, 5, 6), (2, 6, 4)),
        ((5, 6), (3, 6, 4)),
        ((6,), (6, 4)),
        ((3, 5, 6), (6,)),
        ((2, 64, 200), (200, 48)),
    ],
)
@pytest.mark.parametrize("dtypes", [(U8, U8), (I8, I8), (U8, I8), (I8, U8)])
def test_matmul_integer_shapes(a_shape, b_shape, dtypes):
    feeds = {
        "a": ints(a_shape, 1, dtypes[0]),
        "b": ints(b_shape, 2, dtypes[1]),
        "za": np.array(ints((1,), 3, dtypes[0])[0], dtype=dtypes[0]),
        "zb": ints((1,), 4, dtypes[1]),
    }
    exact(*build("MatMulInteger", ["a", "b", "za", "zb"], feeds))


def test_matmul_integer_without_zero_points():
    feeds = {"a": ints((2, 4, 9), 5, U8), "b": ints((9, 3), 6, I8)}
    exact(*build("MatMulInteger", ["a", "b"], feeds))
    feeds["zb"] = ints((3,), 7, I8)
    exact(*build("MatMulInteger", ["a", "b", "", "zb"], feeds))


@pytest.mark.parametrize("constant", [False, True])
def test_matmul_integer_per_row_and_column(constant):
    feeds = {
        "a": ints((6, 10), 8, U8),
        "b": ints((10, 7), 9, I8),
        "za": ints((6,), 10, U8),
        "zb": ints((7,), 11, I8),
    }
    exact(*build("MatMulInteger", ["a", "b", "za", "zb"], feeds, constants=("zb",) * constant))


def test_matmul_integer_zero_points_per_batch():
    # N-D zero points: [D, M, 1] for A, [D, 1, N] for B
    feeds = {
        "a": ints((3, 4, 5), 12, I8),
        "b": ints((3, 5, 6), 13, U8),
        "za": ints((3, 4, 1), 14, I8),
        "zb": ints((3, 1, 6), 15, U8),
    }
    exact(*build("MatMulInteger", ["a", "b", "za", "zb"], feeds))
    # broadcast batch: B shared by every batch, its zero point per column
    feeds["b"], feeds["zb"] = ints((5, 6), 16, U8), ints((1, 6), 17, U8)
    exact(*build("MatMulInteger", ["a", "b", "za", "zb"], feeds))


def test_matmul_integer_extremes_are_exact():
    # every product at its largest magnitude: sums far beyond int16, exact in int32
    a = np.full((3, 300), 255, dtype=U8)
    b = np.concatenate([np.full((300, 2), 0, dtype=U8), np.full((300, 2), 255, dtype=U8)], 1)
    feeds = {"a": a, "b": b, "za": np.array(0, U8), "zb": np.array([128], U8)}
    y = exact(*build("MatMulInteger", ["a", "b", "za", "zb"], feeds))[0]
    assert y.min() == -255 * 128 * 300 and y.max() == 255 * 127 * 300


# -- QLinearMatMul ------------------------------------------------------------------------
def qlinear_matmul_feeds(a_shape, b_shape, dtype, scale_dtype, seed, per_line=False):
    m = a_shape[-2] if len(a_shape) > 1 else 1
    n = b_shape[-1] if len(b_shape) > 1 else 1
    a_param, b_param = ((m,), (n,)) if per_line else ((1,), (1,))
    return {
        "a": ints(a_shape, seed, dtype),
        "sa": scales(a_param, seed + 1, scale_dtype),
        "za": ints(a_param, seed + 2, dtype),
        "b": ints(b_shape, seed + 3, dtype),
        "sb": scales(b_param, seed + 4, scale_dtype),
        "zb": ints(b_param, seed + 5, dtype),
        "sy": scales((1,), seed + 6, scale_dtype, 0.2, 0.5),
        "zy": ints((1,), seed + 7, dtype),
    }


QMM = ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"]


def qmm_model(feeds, constants=()):
    inputs = {n: feeds[n].shape for n in QMM if n not in constants}
    dtypes = {n: feeds[n].dtype for n in QMM}
    model = onnx_model(
        [node("QLinearMatMul", QMM, ["y"])],
        inputs,
        {"y": None},
        {n: feeds[n] for n in constants},
        dtypes={**dtypes, "y": feeds["zy"].dtype},
    )
    return model, {n: feeds[n] for n in inputs}


def saturates(y, dtype):
    info = np.iinfo(dtype)
    return y.min() == info.min and y.max() == info.max


@pytest.mark.parametrize(
    "a_shape,b_shape",
    [((2, 4), (4, 3)), ((2, 2, 4), (2, 4, 3)), ((9, 40), (40, 11)), ((2, 1, 5, 64), (3, 64, 6))],
)
@pytest.mark.parametrize("dtype", [U8, I8])
@pytest.mark.parametrize("scale_dtype", [np.float32, np.float16])
def test_qlinear_matmul(a_shape, b_shape, dtype, scale_dtype):
    feeds = qlinear_matmul_feeds(a_shape, b_shape, dtype, scale_dtype, 20)
    exact(*qmm_model(feeds))


@pytest.mark.parametrize("dtype", [U8, I8])
def test_qlinear_matmul_per_row_and_column_saturates(dtype):
    feeds = qlinear_matmul_feeds((8, 50), (50, 9), dtype, np.float32, 30, per_line=True)
    feeds["sy"] = np.array([0.05], np.float32)  # small: both ends of the output clip
    model, inputs = qmm_model(feeds, constants=("sb", "zb"))
    y = exact(model, inputs)[0]
    assert saturates(y, dtype)


def test_qlinear_matmul_rounds_half_to_even():
    # power-of-two scales: y = acc / 2 exactly, ties wherever acc is odd
    feeds = qlinear_matmul_feeds((6, 7), (7, 5), U8, np.float32, 40)
    rng = np.random.default_rng(41)
    feeds["a"] = rng.integers(0, 7, size=(6, 7)).astype(U8)
    feeds["b"] = rng.integers(0, 5, size=(7, 5)).astype(U8)
    feeds.update(
        sa=np.array([0.5], np.float32), sb=np.array([1], np.float32), sy=np.array([1], np.float32)
    )
    feeds["za"], feeds["zb"], feeds["zy"] = (np.array([v], U8) for v in (3, 2, 128))
    y = exact(*qmm_model(feeds))[0]
    acc = (feeds["a"].astype(np.int64) - 3) @ (feeds["b"].astype(np.int64) - 2)
    half_away = np.sign(acc) * np.floor(np.abs(acc) / 2 + 0.5)
    assert np.any(np.rint(acc / 2) != half_away)  # ties where the two roundings differ
    np.testing.assert_array_equal(y, np.rint(acc / 2) + 128)


def test_qlinear_matmul_per_column_y_scale_is_refused():
    feeds = qlinear_matmul_feeds((4, 6), (6, 3), U8, np.float32, 50)
    feeds["sy"] = scales((3,), 51, np.float32, 0.2, 0.5)
    model, inputs = qmm_model(feeds)
    with pytest.raises(gk.LoweringError, match="QLinearMatMul"):
        gk.parse_onnx_buffer(model).compile("cpu").run(inputs)
    got = gk.parse_onnx_buffer(model).compile("cpu", fallback="ref").run(inputs)[0]
    np.testing.assert_array_equal(got, ref_run(model, inputs))


# -- ConvInteger --------------------------------------------------------------------------
CONV_CASES = [
    ((1, 1, 3, 3), (2, 1, 2, 2), {"pads": [1, 1, 1, 1]}),
    ((2, 3, 9, 8), (4, 3, 3, 3), {}),
    ((1, 4, 11, 10), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1]}),
    ((2, 3, 12, 12), (5, 3, 3, 3), {"dilations": [2, 3], "pads": [2, 2, 2, 2]}),
    ((1, 6, 7, 7), (6, 1, 3, 3), {"group": 6, "auto_pad": "SAME_UPPER"}),
    ((1, 2, 8, 7), (3, 2, 2, 3), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 8, 7), (3, 2, 3, 3), {"auto_pad": "VALID"}),
    ((2, 3, 17), (4, 3, 5), {"pads": [2, 1], "strides": [3]}),
    ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), {"pads": [1, 0, 1, 0, 1, 1]}),
    ((1, 64, 9, 9), (32, 64, 1, 1), {}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
@pytest.mark.parametrize("dtypes", [(U8, U8), (I8, I8), (U8, I8)])
def test_conv_integer(x_shape, w_shape, attrs, dtypes):
    feeds = {
        "x": ints(x_shape, 60, dtypes[0]),
        "w": ints(w_shape, 61, dtypes[1]),
        "zx": np.array(ints((2,), 62, dtypes[0])[1], dtype=dtypes[0]),
        "zw": ints((w_shape[0],), 63, dtypes[1]),
    }
    exact(*build("ConvInteger", ["x", "w", "zx", "zw"], feeds, attrs))


def test_conv_integer_zero_point_forms():
    feeds = {"x": ints((1, 2, 6, 6), 64, U8), "w": ints((3, 2, 3, 3), 65, U8)}
    exact(*build("ConvInteger", ["x", "w"], feeds, {"pads": [1, 1, 1, 1]}))
    feeds["zx"] = np.array([7], U8)
    exact(*build("ConvInteger", ["x", "w", "zx"], feeds))
    feeds["zw"] = np.array([200], U8)
    exact(*build("ConvInteger", ["x", "w", "", "zw"], feeds, constants=("w", "zw")))


# -- QLinearConv --------------------------------------------------------------------------
QCONV = ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"]


def qconv_model(feeds, attrs, bias=False, constants=()):
    names = QCONV + (["b"] if bias else [])
    inputs = {n: feeds[n].shape for n in names if n not in constants}
    model = onnx_model(
        [node("QLinearConv", names, ["y"], **attrs)],
        inputs,
        {"y": None},
        {n: feeds[n] for n in constants},
        dtypes={**{n: feeds[n].dtype for n in names}, "y": feeds["zy"].dtype},
    )
    return model, {n: feeds[n] for n in inputs}


def qconv_feeds(x_shape, w_shape, x_dtype, w_dtype, y_dtype, seed, per_channel=True):
    maps = w_shape[0]
    per = (maps,) if per_channel else (1,)
    return {
        "x": ints(x_shape, seed, x_dtype),
        "sx": np.array(scales((1,), seed + 1)[0], np.float32),
        "zx": np.array(ints((2,), seed + 2, x_dtype)[1], x_dtype),
        "w": ints(w_shape, seed + 3, w_dtype),
        "sw": scales(per, seed + 4),
        "zw": ints(per, seed + 5, w_dtype) // 4,
        "sy": np.array(scales((1,), seed + 6, low=0.1, high=0.3)[0], np.float32),
        "zy": np.array(ints((2,), seed + 7, y_dtype)[1], y_dtype),
        "b": np.random.default_rng(seed + 8).integers(-5000, 5000, size=(maps,)).astype(np.int32),
    }


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
@pytest.mark.parametrize("dtypes", [(U8, U8, U8), (I8, I8, I8), (U8, I8, U8), (U8, I8, I8)])
def test_qlinear_conv(x_shape, w_shape, attrs, dtypes):
    feeds = qconv_feeds(x_shape, w_shape, *dtypes, 70)
    exact(*qconv_model(feeds, attrs, bias=True, constants=("w", "sw", "zw", "b")))


@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_without_bias_saturates(per_channel):
    feeds = qconv_feeds((1, 8, 10, 10), (4, 8, 3, 3), U8, I8, U8, 80, per_channel)
    feeds["sy"] = np.array(0.02, np.float32)
    feeds["zx"], feeds["zy"] = np.array(128, U8), np.array(128, U8)  # sums of both signs
    y = exact(*qconv_model(feeds, {"pads": [1, 1, 1, 1]}))[0]
    assert saturates(y, U8)


def test_qlinear_conv_float16_scales():
    feeds = qconv_feeds((1, 3, 8, 8), (4, 3, 3, 3), I8, I8, I8, 90)
    for k in ("sx", "sw", "sy"):
        feeds[k] = feeds[k].astype(np.float16)
    exact(*qconv_model(feeds, {"strides": [2, 2]}, bias=True))
