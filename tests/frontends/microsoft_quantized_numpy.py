# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy versions of onnxruntime's com.microsoft quantized and fused ops, written from the
ContribOperators documentation (dequantize, compute in float64, quantize with round half to
even and saturation), for the cases of microsoft_quantized_models.py: EXPECTED_QUANTIZED
maps a case to a function of (feeds, initializers, attributes) returning its outputs."""

from __future__ import annotations

import numpy as np


def dequantize(q, scale, zero_point, axis=None):
    scale, zero_point = np.asarray(scale, np.float64), np.asarray(zero_point, np.int64)
    if axis is not None and scale.ndim == 1:
        shape = [1] * q.ndim
        shape[axis] = -1
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    return (q.astype(np.int64) - zero_point) * scale


def quantize(x, scale, zero_point, axis=None):
    zero_point = np.asarray(zero_point)
    info = np.iinfo(zero_point.dtype)
    scale = np.asarray(scale, np.float64)
    zp = zero_point.astype(np.int64)
    if axis is not None and scale.ndim == 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    q = np.rint(np.asarray(x, np.float64) / scale) + zp
    return np.clip(q, info.min, info.max).astype(zero_point.dtype)


def _inputs(f, c):
    v = {**f, **c}
    return v


def _binary(op):
    def run(f, c, a):
        v = _inputs(f, c)
        real = op(dequantize(v["a"], v["a_s"], v["a_z"]), dequantize(v["b"], v["b_s"], v["b_z"]))
        return [quantize(real, v["y_s"], v["y_z"])]

    return run


def _unary(op):
    def run(f, c, a):
        v = _inputs(f, c)
        return [quantize(op(dequantize(v["a"], v["a_s"], v["a_z"]), a), v["y_s"], v["y_z"])]

    return run


def _sigmoid(x, a):
    return 1.0 / (1.0 + np.exp(-x))


def _leaky(x, a):
    return np.where(x >= 0, x, a["alpha"] * x)


def _pool(x, a):
    axes = tuple(range(1, x.ndim - 1)) if a.get("channels_last") else tuple(range(2, x.ndim))
    return x.mean(axis=axes, keepdims=True)


def _concat(f, c, a):
    v = _inputs(f, c)
    parts = [dequantize(v["a"], v["a_s"], v["a_z"]), dequantize(v["c"], v["b_s"], v["b_z"])]
    return [quantize(np.concatenate(parts, axis=a["axis"]), v["y_s"], v["y_z"])]


def _quantize_linear(f, c, a):
    return [quantize(f["x"], c["s"], c["z"], a.get("axis", 1))]


def _dequantize_linear(f, c, a):
    return [dequantize(f["q"], c["s"], c["z"], a.get("axis", 1))]


def _integer_to_float(f, c, a):
    v = _inputs(f, c)
    a_int = v["a"].astype(np.int64) - v["a_z"].astype(np.int64)
    b_int = v["b"].astype(np.int64) - v["b_z"].astype(np.int64)
    scale = np.float64(v["a_s"]) * v["b_s"].astype(np.float64)
    return [(a_int @ b_int) * scale + v["bias"]]


def dynamic_quantize(x):
    """DynamicQuantizeLinear: uint8 over [min(x, 0), max(x, 0)]."""
    low, high = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = np.float32((high - low) / 255.0)
    zero_point = np.uint8(np.clip(np.rint(-low / scale), 0, 255))
    return quantize(x, scale, zero_point), scale, zero_point


def _dynamic_quantize_matmul(f, c, a):
    q, scale, zero_point = dynamic_quantize(f["a"])
    return _integer_to_float({"a": q, "a_s": scale, "a_z": zero_point}, c, a)


def _qgemm(f, c, a):
    v = _inputs(f, c)
    a_int = v["ga"].T.astype(np.int64) - v["ga_z"].astype(np.int64)
    b_int = v["gb"].T.astype(np.int64) - v["gb_z"].astype(np.int64)
    scale = a["alpha"] * np.float64(v["ga_s"]) * v["gb_s"].astype(np.float64)
    real = (a_int @ b_int + v["gc"]) * scale
    return [quantize(real, v["gy_s"], v["gy_z"])] if "gy_s" in v else [real]


def _activate(y, name, params):
    name = name.decode() if isinstance(name, bytes) else name
    if name == "Relu":
        return np.maximum(y, 0)
    if name == "LeakyRelu":
        return np.where(y >= 0, y, params[0] * y)
    if name == "Sigmoid":
        return 1.0 / (1.0 + np.exp(-y))
    if name == "Tanh":
        return np.tanh(y)
    if name == "Clip":
        return np.clip(y, params[0], params[1])
    if name == "HardSigmoid":
        return np.clip(params[0] * y + params[1], 0, 1)
    raise ValueError(name)


def conv2d(x, w, bias, pad):
    """NCHW convolution of stride 1, `pad` on every side."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = x.shape
    m, _, kh, kw = w.shape
    out = np.zeros((n, m, h - kh + 1, wd - kw + 1))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i : i + out.shape[2], j : j + out.shape[3]]
            out += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j])
    return out + bias[None, :, None, None]


def _fused_conv(f, c, a):
    y = conv2d(f["x"], c["w"], c["bias"], a["pads"][0])
    if "z" in f:
        y = y + f["z"]
    return [_activate(y, a["activation"], list(a.get("activation_params", [])))]


def _fused_gemm(f, c, a):
    b = c["b"].T if a.get("transB") else c["b"]
    y = a["alpha"] * (f["a"].astype(np.float64) @ b) + a["beta"] * c["c"]
    params = [a[k] for k in ("activation_alpha", "activation_beta") if k in a]
    return [_activate(y, a["activation"], params)]


_BY_OP = {
    "qlinear_add": _binary(np.add),
    "qlinear_mul": _binary(np.multiply),
    "qlinear_sigmoid": _unary(_sigmoid),
    "qlinear_leaky_relu": _unary(_leaky),
    "qlinear_global_average_pool": _unary(_pool),
    "qlinear_global_average_pool_nhwc": _unary(_pool),
    "qlinear_concat": _concat,
    "quantize_linear": _quantize_linear,
    "quantize_linear_axis": _quantize_linear,
    "dequantize_linear_axis": _dequantize_linear,
    "matmul_integer_to_float": _integer_to_float,
    "dynamic_quantize_matmul": _dynamic_quantize_matmul,
    "qgemm": _qgemm,
    "qgemm_float": _qgemm,
}
EXPECTED_QUANTIZED = {f"{op}_{tag}": fn for op, fn in _BY_OP.items() for tag in ("u8", "s8")}
for _act in ("relu", "leakyrelu", "sigmoid", "tanh", "clip", "hardsigmoid", "sum"):
    EXPECTED_QUANTIZED[f"fused_conv_{_act}"] = _fused_conv
for _act in ("relu", "leakyrelu", "tanh", "hardsigmoid"):
    EXPECTED_QUANTIZED[f"fused_gemm_{_act}"] = _fused_gemm
