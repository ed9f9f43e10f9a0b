# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Pointwise chains that are functions of one u8 / i8 tensor run as a 256-entry table
(targets/cpu/lower_byte_table.py): a QDQ sigmoid, a QDQ SiLU (whose DequantizeLinear has two
readers: passes/expand_quantize.py gives each its own), a requantization, HardSwish; plain
and channels-last (between int8 convolutions). The values are ref's, bit for bit; chains
with a second varying input or a tensor constant stay on the pointwise interpreter."""

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import onednn_int8, check_cpu, node, onnx_model

I8, U8 = np.int8, np.uint8
SHAPE = (2, 8, 9, 11)


def _kernels(model):
    program = gk.parse_onnx_buffer(model).compile("cpu")
    plans = program._executable._plans.values()
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


def _all_bytes(dtype, shape=SHAPE, seed=0):
    """Every value of the type, then random ones."""
    info = np.iinfo(dtype)
    every = np.arange(info.min, info.max + 1)
    rest = np.random.default_rng(seed).integers(info.min, info.max + 1, int(np.prod(shape)))
    return np.concatenate([every, rest])[: int(np.prod(shape))].reshape(shape).astype(dtype)


def _params(dtype, prefix, scale, zero):
    return {f"{prefix}s": np.array(scale, np.float32), f"{prefix}z": np.array(zero, dtype)}


def _silu(dtype):
    """Q(DQ(x) * DQ(Q(Sigmoid(DQ(x))))): one DequantizeLinear read twice."""
    nodes = [
        node("DequantizeLinear", ["x", "xs", "xz"], ["xr"]),
        node("Sigmoid", ["xr"], ["sig"]),
        node("QuantizeLinear", ["sig", "ss", "sz"], ["sq"]),
        node("DequantizeLinear", ["sq", "ss", "sz"], ["sr"]),
        node("Mul", ["xr", "sr"], ["m"]),
        node("QuantizeLinear", ["m", "ys", "yz"], ["y"]),
    ]
    low = 0 if dtype == U8 else -128
    inits = {
        **_params(dtype, "x", 0.07, 5 if dtype == U8 else -4),
        **_params(dtype, "s", 1 / 255, low),
        **_params(dtype, "y", 0.03, 20 if dtype == U8 else 2),
    }
    return nodes, inits


def _model(nodes, inits, dtype, shape=SHAPE):
    dtypes = {"x": dtype, "y": dtype, **{k: v.dtype for k, v in inits.items()}}
    return onnx_model(nodes, {"x": shape}, {"y": shape}, inits, dtypes=dtypes)


@pytest.mark.parametrize("dtype", [U8, I8])
def test_qdq_silu_is_one_table(dtype):
    model = _model(*_silu(dtype), dtype)
    assert _kernels(model) == ["CastLookup"]
    check_cpu(model, {"x": _all_bytes(dtype)})


@pytest.mark.parametrize("dtype", [U8, I8])
@pytest.mark.parametrize("op", ["Sigmoid", "HardSwish", "Tanh", "Identity"])
def test_qdq_unary_is_one_table(dtype, op):
    nodes = [
        node("DequantizeLinear", ["x", "xs", "xz"], ["xr"]),
        node(op, ["xr"], ["r"]),
        node("QuantizeLinear", ["r", "ys", "yz"], ["y"]),
    ]
    inits = {**_params(dtype, "x", 0.05, 3), **_params(dtype, "y", 0.009, 7)}
    model = _model(nodes, inits, dtype)
    assert _kernels(model) == ["CastLookup"]
    check_cpu(model, {"x": _all_bytes(dtype, seed=1)})


def test_second_varying_input_stays_on_the_interpreter():
    nodes = [
        node("DequantizeLinear", ["x", "xs", "xz"], ["xr"]),
        node("DequantizeLinear", ["x2", "xs", "xz"], ["xr2"]),
        node("Add", ["xr", "xr2"], ["r"]),
        node("QuantizeLinear", ["r", "ys", "yz"], ["y"]),
    ]
    inits = {**_params(U8, "x", 0.05, 3), **_params(U8, "y", 0.1, 7)}
    dtypes = {"x": U8, "x2": U8, "y": U8, **{k: v.dtype for k, v in inits.items()}}
    model = onnx_model(nodes, {"x": SHAPE, "x2": SHAPE}, {"y": SHAPE}, inits, dtypes=dtypes)
    assert _kernels(model) == ["Pointwise"]
    check_cpu(model, {"x": _all_bytes(U8), "x2": _all_bytes(U8, seed=2)})


def test_per_channel_constant_stays_on_the_interpreter():
    nodes = [
        node("DequantizeLinear", ["x", "xs", "xz"], ["xr"]),
        node("Mul", ["xr", "c"], ["r"]),
        node("QuantizeLinear", ["r", "ys", "yz"], ["y"]),
    ]
    inits = {
        **_params(U8, "x", 0.05, 3),
        **_params(U8, "y", 0.1, 7),
        "c": np.linspace(0.5, 2, SHAPE[1], dtype=np.float32).reshape(1, -1, 1, 1),
    }
    model = _model(nodes, inits, U8)
    assert "CastLookup" not in _kernels(model)
    check_cpu(model, {"x": _all_bytes(U8)})


@pytest.mark.skipif(not onednn_int8(), reason="int8 convolutions need VNNI / AMX")
def test_table_between_int8_convolutions_reads_channels_last():
    """QLinearConv -> QDQ SiLU -> QLinearConv: the table runs on the channels-last bytes."""
    rng = np.random.default_rng(3)
    silu, silu_inits = _silu(U8)
    rename = {"x": "c0", "y": "a0"}
    silu = [
        node(n.op_type, [rename.get(i, i) for i in n.input], [rename.get(o, o) for o in n.output])
        for n in silu
    ]
    inits = dict(silu_inits)
    convs = []
    for i, (src, dst, zero) in enumerate([("x", "c0", 5), ("a0", "y", 9)]):
        inits.update(
            {
                f"w{i}": rng.integers(-127, 128, size=(8, 8, 3, 3)).astype(I8),
                f"ws{i}": rng.uniform(0.002, 0.01, size=(8,)).astype(np.float32),
                f"wz{i}": np.zeros((8,), I8),
                f"qs{i}": np.array(0.07, np.float32),
                f"qz{i}": np.array(zero, U8),
            }
        )
        x_params = ["xs", "xz"] if i == 0 else ["ys", "yz"]
        convs.append(
            node(
                "QLinearConv",
                [src, *x_params, f"w{i}", f"ws{i}", f"wz{i}", f"qs{i}", f"qz{i}"],
                [dst],
                pads=[1, 1, 1, 1],
            )
        )
    # the SiLU reads the first conv's output with its own parameters
    inits["xs"], inits["xz"] = np.array(0.07, np.float32), np.array(5, U8)
    model = _model([convs[0], *silu, convs[1]], inits, U8, shape=(1, 8, 12, 12))
    kernels = _kernels(model)
    assert kernels.count("CastLookup") == 1 and kernels.count("Conv") == 2
    assert "Copy" not in kernels[kernels.index("Conv") : kernels.index("Conv", 1)]
    ref = gk.parse_onnx_buffer(model).compile("ref").run({"x": _all_bytes(U8, (1, 8, 12, 12))})
    cpu = gk.parse_onnx_buffer(model).compile("cpu").run({"x": _all_bytes(U8, (1, 8, 12, 12))})
    diff = np.abs(np.asarray(cpu[0], np.int32) - np.asarray(ref[0], np.int32))
    assert diff.max() <= 2 and np.mean(diff == 0) > 0.95
