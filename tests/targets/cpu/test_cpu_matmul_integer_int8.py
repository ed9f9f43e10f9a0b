# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""MatMulInteger on oneDNN's int8 matmul (targets/cpu/lower_qmatmul.py): u8 / i8 A of 2 to
4 dims, a constant i8 B, A's zero point absent, constant or computed by
DynamicQuantizeLinear (quantize_dynamic's pattern); the int32 sums equal ref's exactly.
B with a zero point that is not 0 stays on the portable kernel, also exact."""

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import onednn_int8, check_cpu, node, onnx_model

I8, U8 = np.int8, np.uint8


def _kernels(model):
    program = gk.parse_onnx_buffer(model).compile("cpu")
    plans = program._executable._plans.values()
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


def _ints(shape, seed, dtype):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, size=shape).astype(dtype)


@pytest.mark.parametrize("a_dtype", [U8, I8])
@pytest.mark.parametrize("a_shape", [(7, 64), (2, 9, 48), (2, 3, 5, 32)])
@pytest.mark.parametrize("zero_point", [None, "constant"])
def test_matmul_integer_on_onednn(a_dtype, a_shape, zero_point):
    k, n = a_shape[-1], 40
    inits = {"b": _ints((k, n), 1, I8)}
    names = ["a", "b"]
    if zero_point == "constant":
        inits["az"] = np.array(77 if a_dtype == U8 else -9, a_dtype)
        names.append("az")
    dtypes = {"a": a_dtype, "y": np.int32, **{k: v.dtype for k, v in inits.items()}}
    model = onnx_model(
        [node("MatMulInteger", names, ["y"])], {"a": a_shape}, {"y": None}, inits, dtypes=dtypes
    )
    assert _kernels(model) == ["MatMul" if onednn_int8() else "MatMulInteger"]
    check_cpu(model, {"a": _ints(a_shape, 2, a_dtype)})


def test_dynamic_quantization_pattern():
    """DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W, x_zero_point, 0) -> Cast -> Mul:
    the zero point is read at each run (two inputs of different ranges)."""
    w = _ints((24, 16), 3, I8)
    nodes = [
        node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]),
        node("Cast", ["acc"], ["accf"], to=1),
        node("Mul", ["xs", "ws"], ["scale"]),
        node("Mul", ["accf", "scale"], ["y"]),
    ]
    inits = {"w": w, "wz": np.array(0, I8), "ws": np.array(0.01, np.float32)}
    dtypes = {"w": I8, "wz": I8, "ws": np.float32}
    model = onnx_model(nodes, {"x": (5, 24)}, {"y": (5, 16)}, inits, dtypes=dtypes)
    kernels = _kernels(model)
    assert ("MatMul" in kernels) == onednn_int8() != ("MatMulInteger" in kernels)
    rng = np.random.default_rng(4)
    for low, high in ((-1.0, 3.0), (0.5, 9.0)):  # zero points 64 and 0
        check_cpu(model, {"x": rng.uniform(low, high, (5, 24)).astype(np.float32)})


def test_weight_zero_point_stays_on_the_portable_kernel():
    inits = {"b": _ints((32, 8), 5, I8), "bz": np.array(3, I8)}
    dtypes = {"a": U8, "y": np.int32, "b": I8, "bz": I8}
    model = onnx_model(
        [node("MatMulInteger", ["a", "b", "", "bz"], ["y"])],
        {"a": (4, 32)},
        {"y": None},
        inits,
        dtypes=dtypes,
    )
    assert _kernels(model) == ["MatMulInteger"]
    check_cpu(model, {"a": _ints((4, 32), 6, U8)})


@pytest.mark.parametrize("shape", [(3, 7), (128, 3072)])
def test_dynamic_quantize_linear_large_and_small(shape):
    """The vectorized range and quantization (split over threads when large) equal ref's."""
    model = onnx_model(
        [node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
        {"x": shape},
        {"y": None, "s": None, "z": None},
        dtypes={"y": U8, "s": np.float32, "z": U8},
    )
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 3 + 0.7).astype(np.float32)
    check_cpu(model, {"x": x})


def test_int32_epilogue_computes_in_float32_as_ref():
    """Cast(int32 -> float32) -> Mul -> Gelu: the int32 input is rounded to float32 once,
    as the Cast does, also beyond 2**24 (the chain no longer needs double precision)."""
    nodes = [
        node("Cast", ["acc"], ["f"], to=1),
        node("Mul", ["f", "scale"], ["m"]),
        node("Gelu", ["m"], ["y"]),
    ]
    model = onnx_model(
        nodes,
        {"acc": (64, 40)},
        {"y": (64, 40)},
        {"scale": np.array(3e-8, np.float32)},
        opset=20,
        dtypes={"acc": np.int32},
    )
    acc = np.random.default_rng(8).integers(-(2**31), 2**31 - 1, (64, 40)).astype(np.int32)
    check_cpu(model, {"acc": acc}, rtol=1e-6, atol=1e-7)
