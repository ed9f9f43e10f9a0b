# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""QLinearConv on oneDNN's int8 convolution (targets/cpu/lower_qconv.py): constant i8
weights with zero points 0, per-tensor or per-channel w_scale, u8 / i8 x and y with any zero
point, padding (which reads x's zero point), strides, dilations, groups, 1-D to 3-D, the
int32 bias; chains of them stay channels-last. oneDNN requantizes in float32: every value
is within one unit of ref's (double) and nearly all are equal. Max pooling of u8 / i8 data
on oneDNN too. What oneDNN cannot take (w's zero point not 0) stays on the exact kernel,
as does everything on a CPU without VNNI / AMX, where oneDNN's int8 sums saturate."""

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import onednn_int8, node, onnx_model, run_both

I8, U8 = np.int8, np.uint8


NEEDS_ONEDNN_INT8 = pytest.mark.skipif(
    not onednn_int8(), reason="oneDNN's int8 kernels need VNNI / AMX (int8_isa.py)"
)


def _ints(shape, seed, dtype):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, size=shape).astype(dtype)


def _one(value, dtype):
    return np.array(value, dtype)


def _kernels(model):
    program = gk.parse_onnx_buffer(model).compile("cpu")
    return [
        step.kernel
        for plans in program._executable._plans.values()
        for s in plans
        for step in s.plan.steps
    ]


def _check_within_one_unit(model, feeds):
    ref, cpu = run_both(model, feeds)
    for r, c in zip(ref, cpu):
        r, c = np.asarray(r), np.asarray(c)
        assert c.dtype == r.dtype and c.shape == r.shape
        diff = np.abs(c.astype(np.int32) - r.astype(np.int32))
        assert diff.max() <= 1, diff.max()
        assert np.mean(diff == 0) > 0.97, np.mean(diff == 0)
        assert len(np.unique(r)) > 8  # the values spread over the type's range
    return cpu


def _qconv(x_shape, w_shape, x_dtype, y_dtype, attrs, seed, per_channel=True, bias=True):
    """A QLinearConv model with constant weights (w's zero point 0) and its feeds."""
    rng = np.random.default_rng(seed)
    maps, fan_in = w_shape[0], int(np.prod(w_shape[1:]))
    w = _ints(w_shape, seed + 1, I8)
    w_scale = rng.uniform(0.002, 0.02, size=(maps,) if per_channel else ()).astype(np.float32)
    x_scale = np.float32(0.05)
    # an output scale that spreads y over its type: the integer sums' spread (x and w about
    # 74 apart on average each) over 40 units
    y_scale = np.float32(x_scale * float(np.mean(w_scale)) * 74 * 74 * np.sqrt(fan_in) / 40)
    inits = {
        "sx": _one(x_scale, np.float32),
        "zx": _one(7 if x_dtype == U8 else -3, x_dtype),
        "w": w,
        "sw": w_scale,
        "zw": np.zeros(w_scale.shape, I8),
        "sy": _one(y_scale, np.float32),
        "zy": _one(120 if y_dtype == U8 else 5, y_dtype),
    }
    names = ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"]
    if bias:
        inits["b"] = rng.integers(-3000, 3000, size=(maps,)).astype(np.int32)
        names.append("b")
    model = onnx_model(
        [node("QLinearConv", names, ["y"], **attrs)],
        {"x": x_shape},
        {"y": None},
        inits,
        dtypes={"x": x_dtype, "y": y_dtype, **{k: v.dtype for k, v in inits.items()}},
    )
    return model, {"x": _ints(x_shape, seed + 2, x_dtype)}


CASES = [
    # x, w, attrs
    ((1, 16, 12, 12), (32, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 8, 15, 13), (24, 8, 3, 3), {"pads": [1, 0, 2, 1], "strides": [2, 2]}),
    ((1, 32, 9, 9), (64, 32, 1, 1), {}),
    ((1, 3, 20, 20), (16, 3, 7, 7), {"pads": [3, 3, 3, 3], "strides": [2, 2]}),  # a stem
    ((1, 16, 10, 10), (16, 4, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),
    ((1, 24, 11, 11), (24, 1, 3, 3), {"group": 24, "pads": [2, 2, 2, 2], "dilations": [2, 2]}),
    ((1, 12, 40), (20, 12, 5), {"pads": [2, 2]}),  # 1-D
    ((1, 4, 6, 7, 8), (8, 4, 3, 3, 3), {"pads": [1, 1, 1, 1, 1, 1]}),  # 3-D
    ((1, 8, 9, 9), (16, 8, 3, 3), {"auto_pad": "SAME_UPPER"}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CASES)
@pytest.mark.parametrize("x_dtype,y_dtype", [(U8, U8), (I8, I8), (U8, I8)])
def test_qlinear_conv_on_onednn(x_shape, w_shape, attrs, x_dtype, y_dtype):
    model, feeds = _qconv(x_shape, w_shape, x_dtype, y_dtype, attrs, 10)
    # oneDNN's, not the portable QLinearConv kernel (that one where oneDNN would saturate)
    assert ("Conv" in _kernels(model)) == onednn_int8()
    _check_within_one_unit(model, feeds)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv_scales_and_bias(per_channel, bias):
    model, feeds = _qconv(
        (1, 8, 10, 10), (16, 8, 3, 3), U8, U8, {"pads": [1] * 4}, 20, per_channel, bias
    )
    _check_within_one_unit(model, feeds)


def test_weight_zero_point_stays_on_the_exact_kernel():
    model, feeds = _qconv((1, 8, 10, 10), (16, 8, 3, 3), U8, U8, {"pads": [1] * 4}, 30)
    proto = __import__("onnx").load_from_string(model)
    for init in proto.graph.initializer:
        if init.name == "zw":
            init.CopyFrom(__import__("onnx").numpy_helper.from_array(np.full((16,), 2, I8), "zw"))
    model = proto.SerializeToString()
    assert "Conv" not in _kernels(model) and "QLinearConv" in _kernels(model)
    ref, cpu = run_both(model, feeds)
    np.testing.assert_array_equal(cpu[0], ref[0])


@NEEDS_ONEDNN_INT8
def test_chain_stays_channels_last():
    """QLinearConv -> u8 MaxPool -> QLinearConv: no reorder between them."""
    rng = np.random.default_rng(40)
    inits = {}
    nodes = []
    src = "x"
    for i, (cin, cout) in enumerate([(8, 16), (16, 16)]):
        inits.update(
            {
                f"sx{i}": _one(0.05, np.float32),
                f"zx{i}": _one(4, U8),
                f"w{i}": _ints((cout, cin, 3, 3), 41 + i, I8),
                f"sw{i}": rng.uniform(0.002, 0.01, size=(cout,)).astype(np.float32),
                f"zw{i}": np.zeros((cout,), I8),
                f"sy{i}": _one(0.05, np.float32),
                f"zy{i}": _one(4, U8),
            }
        )
        names = [src] + [f"{k}{i}" for k in ("sx", "zx", "w", "sw", "zw", "sy", "zy")]
        nodes.append(node("QLinearConv", names, [f"c{i}"], pads=[1, 1, 1, 1]))
        src = f"c{i}"
        if i == 0:
            nodes.append(
                node(
                    "MaxPool", [src], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
                )
            )
            src = "p0"
    dtypes = {"x": U8, src: U8, **{k: v.dtype for k, v in inits.items()}}
    model = onnx_model(nodes, {"x": (1, 8, 16, 16)}, {src: None}, inits, dtypes=dtypes)
    kernels = _kernels(model)
    assert kernels.count("Conv") == 2 and "Pool" in kernels
    assert kernels.count("Copy") <= 2  # into the first conv's layout and out of the last
    _check_within_one_unit(model, {"x": _ints((1, 8, 16, 16), 45, U8)})


@pytest.mark.parametrize("dtype", [U8, I8])
def test_int8_max_pool_is_exact(dtype):
    model = onnx_model(
        [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
        {"x": (1, 16, 13, 13)},
        {"y": None},
        dtypes={"x": dtype, "y": dtype},
    )
    feeds = {"x": _ints((1, 16, 13, 13), 50, dtype)}
    assert "Pool" in _kernels(model)
    ref, cpu = run_both(model, feeds)
    np.testing.assert_array_equal(cpu[0], ref[0])


@pytest.mark.parametrize("x_dtype", [U8, I8])
@pytest.mark.parametrize("x_shape,w_shape,attrs", CASES[:3] + CASES[5:7])
def test_conv_integer_on_onednn(x_dtype, x_shape, w_shape, attrs):
    """ConvInteger with constant i8 weights and a constant zero point of x: exact int32."""
    inits = {"w": _ints(w_shape, 60, I8), "zx": _one(9 if x_dtype == U8 else -5, x_dtype)}
    dtypes = {"x": x_dtype, "y": np.int32, "w": I8, "zx": x_dtype}
    model = onnx_model(
        [node("ConvInteger", ["x", "w", "zx"], ["y"], **attrs)],
        {"x": x_shape},
        {"y": None},
        inits,
        dtypes=dtypes,
    )
    assert _kernels(model) == ["Conv" if onednn_int8() else "ConvInteger"]
    ref, cpu = run_both(model, {"x": _ints(x_shape, 61, x_dtype)})
    np.testing.assert_array_equal(cpu[0], ref[0])


def test_dynamically_quantized_conv():
    """quantize_dynamic's CNN pattern: DynamicQuantizeLinear -> ConvInteger with the zero
    point computed per run -> Cast -> Mul; equal to ref for inputs of different ranges."""
    nodes = [
        node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        node("ConvInteger", ["xq", "w", "xz", "wz"], ["acc"], pads=[1, 1, 1, 1]),
        node("Cast", ["acc"], ["accf"], to=1),
        node("Mul", ["xs", "ws"], ["scale"]),
        node("Mul", ["accf", "scale"], ["y"]),
    ]
    inits = {
        "w": _ints((16, 8, 3, 3), 62, I8),
        "wz": np.array(0, I8),
        "ws": np.array(0.004, np.float32),
    }
    dtypes = {k: v.dtype for k, v in inits.items()}
    model = onnx_model(nodes, {"x": (1, 8, 10, 10)}, {"y": None}, inits, dtypes=dtypes)
    assert ("Conv" in _kernels(model)) == onednn_int8() != ("ConvInteger" in _kernels(model))
    rng = np.random.default_rng(63)
    for low, high in ((-2.0, 5.0), (0.5, 3.0)):
        x = rng.uniform(low, high, (1, 8, 10, 10)).astype(np.float32)
        ref, cpu = run_both(model, {"x": x})
        np.testing.assert_allclose(cpu[0], ref[0], rtol=1e-6, atol=1e-6 * np.abs(ref[0]).max())
