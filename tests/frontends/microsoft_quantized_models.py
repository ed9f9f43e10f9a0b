# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Tiny one-node models of onnxruntime's com.microsoft quantized and fused ops (the ones its
quantizers and optimizer write), with seeded feeds: part of microsoft_models.py's CASES
(quantized_cases), so test_microsoft_ops.py and tools/record_microsoft_ops.py use them as
the other cases. Quantized data is uint8 or int8; scales and zero points are initializers."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
SEED = 20251203  # its own generator, so that other families' draws do not move these

_TYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int32): TensorProto.INT32,
}


def _model(op, inputs, feeds, consts, out_dtype, attrs=None):
    """(a model of one node `op` of com.microsoft with output y of `out_dtype`, feeds)."""
    node = helper.make_node(op, inputs, ["y"], domain=MS, **(attrs or {}))
    graph = helper.make_graph(
        [node],
        op.lower(),
        [helper.make_tensor_value_info(k, _TYPES[v.dtype], v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", _TYPES[np.dtype(out_dtype)], None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8), feeds


def _q(rng, dtype, *shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def _zp(dtype, value):
    value = np.asarray(value)
    return (value if dtype == np.uint8 else value - 128).astype(dtype)


def _scale(value):
    return np.asarray(value, dtype=np.float32)


def _elementwise(rng, t, tag) -> dict:
    a, b = _q(rng, t, 2, 3, 4), _q(rng, t, 3, 4)
    qa = {"a_s": _scale(0.05), "a_z": _zp(t, 120), "b_s": _scale(0.03), "b_z": _zp(t, 140)}
    out = {"y_s": _scale(0.07), "y_z": _zp(t, 128)}
    qx = {"a_s": qa["a_s"], "a_z": qa["a_z"]}  # the one-input ops'
    two = ["a", "a_s", "a_z", "b", "b_s", "b_z", "y_s", "y_z"]
    one = ["a", "a_s", "a_z", "y_s", "y_z"]
    cases = {
        f"qlinear_add_{tag}": _model("QLinearAdd", two, {"a": a, "b": b}, {**qa, **out}, t),
        f"qlinear_mul_{tag}": _model(
            "QLinearMul", two, {"a": a, "b": b}, {**qa, "y_s": _scale(0.2), "y_z": out["y_z"]}, t
        ),
        f"qlinear_sigmoid_{tag}": _model(
            "QLinearSigmoid", one, {"a": a}, {**qx, "y_s": _scale(1 / 255), "y_z": _zp(t, 0)}, t
        ),
        f"qlinear_leaky_relu_{tag}": _model(
            "QLinearLeakyRelu", one, {"a": a}, {**qx, **out}, t, {"alpha": 0.2}
        ),
    }
    x = _q(rng, t, 2, 3, 5, 4)
    pool = {**qx, "y_s": _scale(0.01), "y_z": _zp(t, 100)}
    cases[f"qlinear_global_average_pool_{tag}"] = _model(
        "QLinearGlobalAveragePool", one, {"a": x}, pool, t
    )
    cases[f"qlinear_global_average_pool_nhwc_{tag}"] = _model(
        "QLinearGlobalAveragePool", one, {"a": x}, pool, t, {"channels_last": 1}
    )
    c = _q(rng, t, 2, 5, 4)
    cases[f"qlinear_concat_{tag}"] = _model(
        "QLinearConcat",
        ["y_s", "y_z", "a", "a_s", "a_z", "c", "b_s", "b_z"],
        {"a": a, "c": c},
        {**qa, **out},
        t,
        {"axis": 1},
    )
    return cases


def _quantize_pair(rng, t, tag) -> dict:
    x = rng.uniform(-3.0, 3.0, size=(2, 3, 4)).astype(np.float32)
    per_axis = {"s": _scale([0.02, 0.03, 0.05]), "z": np.asarray(_zp(t, [100, 128, 150]), t)}
    q = _q(rng, t, 2, 3, 4)
    return {
        f"quantize_linear_{tag}": _model(
            "QuantizeLinear", ["x", "s", "z"], {"x": x}, {"s": _scale(0.03), "z": _zp(t, 110)}, t
        ),
        f"quantize_linear_axis_{tag}": _model(
            "QuantizeLinear", ["x", "s", "z"], {"x": x}, per_axis, t
        ),
        f"dequantize_linear_axis_{tag}": _model(
            "DequantizeLinear", ["q", "s", "z"], {"q": q}, per_axis, np.float32, {"axis": 1}
        ),
    }


def _products(rng, t, tag) -> dict:
    a, b = _q(rng, np.uint8, 2, 3, 6), _q(rng, t, 6, 5)
    bias = rng.uniform(-1.0, 1.0, size=5).astype(np.float32)
    b_scale = _scale(rng.uniform(0.01, 0.05, size=5))
    consts = {"b": b, "a_s": _scale(0.02), "b_s": b_scale, "a_z": _zp(np.uint8, 130)}
    consts["b_z"] = _zp(t, 125)
    real_a = rng.uniform(-2.0, 3.0, size=(2, 3, 6)).astype(np.float32)
    qgemm = {
        "ga": _q(rng, t, 6, 4),  # A stored [K, M]: transA
        "ga_s": _scale(0.03),
        "ga_z": _zp(t, 120),
        "gb": b.T.copy(),  # B stored [N, K]: transB
        "gb_s": b_scale,
        "gb_z": np.full(5, _zp(t, 125), t),
        "gc": rng.integers(-2000, 2000, size=5).astype(np.int32),
        "gy_s": _scale(0.05),
        "gy_z": _zp(t, 128),
    }
    names = ["ga", "ga_s", "ga_z", "gb", "gb_s", "gb_z", "gc", "gy_s", "gy_z"]
    trans = {"transA": 1, "transB": 1, "alpha": 0.5}
    feeds = {"ga": qgemm.pop("ga")}
    return {
        f"qgemm_{tag}": _model("QGemm", names, feeds, qgemm, t, trans),
        f"qgemm_float_{tag}": _model(
            "QGemm", names[:7], feeds, {k: qgemm[k] for k in names[1:7]}, np.float32, trans
        ),
        f"matmul_integer_to_float_{tag}": _model(
            "MatMulIntegerToFloat",
            ["a", "b", "a_s", "b_s", "a_z", "b_z", "bias"],
            {"a": a},
            {**consts, "bias": bias},
            np.float32,
        ),
        f"dynamic_quantize_matmul_{tag}": _model(
            "DynamicQuantizeMatMul",
            ["a", "b", "b_s", "b_z", "bias"],
            {"a": real_a},
            {k: consts[k] for k in ("b", "b_s", "b_z")} | {"bias": bias},
            np.float32,
        ),
    }


def _fused(rng) -> dict:
    x = rng.uniform(-1.0, 1.0, size=(1, 3, 6, 6)).astype(np.float32)
    w = rng.uniform(-1.0, 1.0, size=(4, 3, 3, 3)).astype(np.float32)
    bias = rng.uniform(-1.0, 1.0, size=4).astype(np.float32)
    z = rng.uniform(-1.0, 1.0, size=(1, 4, 6, 6)).astype(np.float32)
    conv = {"pads": [1, 1, 1, 1], "strides": [1, 1]}
    cases = {}
    for act, params in (
        ("Relu", []),
        ("LeakyRelu", [0.1]),
        ("Sigmoid", []),
        ("Tanh", []),
        ("Clip", [-0.5, 0.8]),
        ("HardSigmoid", [0.3, 0.4]),
    ):
        attrs = {**conv, "activation": act}
        if params:
            attrs["activation_params"] = params
        cases[f"fused_conv_{act.lower()}"] = _model(
            "FusedConv", ["x", "w", "bias"], {"x": x}, {"w": w, "bias": bias}, np.float32, attrs
        )
    cases["fused_conv_sum"] = _model(
        "FusedConv",
        ["x", "w", "bias", "z"],
        {"x": x, "z": z},
        {"w": w, "bias": bias},
        np.float32,
        {**conv, "activation": "Relu"},
    )
    a = rng.uniform(-1.0, 1.0, size=(3, 5)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(4, 5)).astype(np.float32)
    c = rng.uniform(-1.0, 1.0, size=4).astype(np.float32)
    gemm = {"transB": 1, "alpha": 0.7, "beta": 0.5}
    for act, extra in (
        ("Relu", {}),
        ("LeakyRelu", {"activation_alpha": 0.2}),
        ("Tanh", {}),
        ("HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.4}),
    ):
        cases[f"fused_gemm_{act.lower()}"] = _model(
            "FusedGemm",
            ["a", "b", "c"],
            {"a": a},
            {"b": b, "c": c},
            np.float32,
            {**gemm, "activation": act, **extra},
        )
    return cases


def quantized_cases(_rng=None) -> dict[str, tuple[onnx.ModelProto, dict]]:
    """name -> (model, feeds) of the quantized and fused ops, uint8 and int8 forms."""
    rng = np.random.default_rng(SEED)
    cases: dict = {}
    for t, tag in ((np.uint8, "u8"), (np.int8, "s8")):
        cases.update(_elementwise(rng, t, tag))
        cases.update(_quantize_pair(rng, t, tag))
        cases.update(_products(rng, t, tag))
    cases.update(_fused(rng))
    return cases
