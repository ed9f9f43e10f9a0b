# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu kernels of bytes.hip, loss.hip and data.hip (casts to and from float8 / int4,
bit operations, (de)quantization, the loss kernel, IndexMap, ResizeAxis, CumSum, OneHot,
Range, the scatters) and half-precision Attention, against ref: through the numpy model of
the kernels everywhere, on the device where a GPU is usable (marked gpu)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper

import graphkiln as gk
from gpu_testing import compare, requires_gpu, run_emulated, run_gpu

CASES: dict = {}
node = helper.make_node


def _type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def model(nodes, inputs: dict, outputs: dict, opset: int = 23, inits: dict | None = None) -> bytes:
    """inputs / outputs: name -> (shape, numpy dtype)."""
    info = lambda n, s, t: helper.make_tensor_value_info(n, _type(t), s)  # noqa: E731
    graph = helper.make_graph(
        nodes,
        "t",
        [info(n, s, t) for n, (s, t) in inputs.items()],
        [info(n, s, t) for n, (s, t) in outputs.items()],
        [onnx.numpy_helper.from_array(v, n) for n, v in (inits or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m.SerializeToString()


def rand(shape, seed, low=-3.0, high=3.0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn

    return register


F32, F8, I4 = np.float32, ml_dtypes.float8_e4m3fn, ml_dtypes.int4


def _cast(src, dst, data, **attrs):
    def make():
        shape = data.shape
        return (
            model(
                [node("Cast", ["x"], ["y"], to=_type(dst), **attrs)],
                {"x": (shape, src)},
                {"y": (shape, dst)},
            ),
            {"x": data},
        )

    return make


_f = np.concatenate([rand((40,), 1, -500, 500), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-9]])
_f = _f.astype(np.float32)
CASES["cast_f32_to_f8e4m3fn"] = _cast(F32, F8, _f)
CASES["cast_f32_to_f8e5m2_nosat"] = _cast(F32, ml_dtypes.float8_e5m2, _f, saturate=0)
CASES["cast_f64_to_f8e4m3fnuz"] = _cast(
    np.float64, ml_dtypes.float8_e4m3fnuz, _f.astype(np.float64)
)
CASES["cast_f8e4m3fn_to_f32"] = _cast(F8, F32, _f.astype(F8))
CASES["cast_f16_to_f8e5m2"] = _cast(np.float16, ml_dtypes.float8_e5m2, _f.astype(np.float16))
CASES["cast_f32_to_int4"] = _cast(F32, I4, rand((3, 7), 2, -20, 20))
CASES["cast_i64_to_uint4"] = _cast(np.int64, ml_dtypes.uint4, rand((9,), 3, -40, 40, np.int64))
CASES["cast_int4_to_f32"] = _cast(I4, F32, rand((9,), 4, -8, 8, np.int8).astype(I4))
CASES["cast_f32_to_f4e2m1"] = _cast(F32, ml_dtypes.float4_e2m1fn, rand((11,), 5, -8, 8))


def _bit(op, a, b, dtype, **attrs):
    def make():
        out = np.broadcast_shapes(a, b)
        return (
            model(
                [node(op, ["a", "b"], ["y"], **attrs)],
                {"a": (a, dtype), "b": (b, dtype)},
                {"y": (out, dtype)},
            ),
            {"a": rand(a, 6, -100, 100, dtype), "b": rand(b, 7, -3, 70, dtype)},
        )

    return make


CASES["bitwise_and_broadcast_i32"] = _bit("BitwiseAnd", (2, 3, 4), (3, 1), np.int32)
CASES["bitwise_xor_i64"] = _bit("BitwiseXor", (5,), (5,), np.int64)
CASES["bitshift_left_u8"] = _bit("BitShift", (4, 3), (3,), np.uint8, direction="LEFT")
CASES["bitshift_right_i16"] = _bit("BitShift", (6,), (6,), np.int16, direction="RIGHT")


@case("bitwise_not_u16")
def _():
    return (
        model(
            [node("BitwiseNot", ["a"], ["y"])],
            {"a": ((3, 4), np.uint16)},
            {"y": ((3, 4), np.uint16)},
        ),
        {"a": rand((3, 4), 8, 0, 60000, np.uint16)},
    )


@case("quantize_per_axis_u8")
def _():
    inits = {"s": np.array([0.5, 0.02, 0.1], F32), "z": np.array([128, 3, 0], np.uint8)}
    return (
        model(
            [node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)],
            {"x": ((2, 3, 4), F32)},
            {"y": ((2, 3, 4), np.uint8)},
            inits=inits,
        ),
        {"x": rand((2, 3, 4), 9, -30, 30)},
    )


@case("dequantize_blocked_i8")
def _():
    inits = {"s": rand((2, 2), 10, 0.1, 1.0), "z": np.array([[1, -2], [0, 5]], np.int8)}
    return (
        model(
            [node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1, block_size=3)],
            {"x": ((2, 6), np.int8)},
            {"y": ((2, 6), F32)},
            inits=inits,
        ),
        {"x": rand((2, 6), 11, -128, 127, np.int8)},
    )


def _nll(reduction, weight, ignore=None, sce=False):
    def make():
        op = "SoftmaxCrossEntropyLoss" if sce else "NegativeLogLikelihoodLoss"
        ins = {"x": ((3, 5, 4), F32), "t": ((3, 4), np.int64)}
        if weight:
            ins["w"] = ((5,), F32)
        out_shape = (3, 4) if reduction == "none" else ()
        outs = {"y": (out_shape, F32)}
        names = ["y"]
        if sce:
            outs["lp"] = ((3, 5, 4), F32)
            names.append("lp")
        attrs = {"reduction": reduction} | ({} if ignore is None else {"ignore_index": ignore})
        t = rand((3, 4), 12, 0, 5, np.int64)
        t[0, 1] = 2 if ignore is None else ignore
        feeds = {"x": rand((3, 5, 4), 13), "t": t}
        if weight:
            feeds["w"] = rand((5,), 14, 0.1, 1.0)
        return model([node(op, list(ins), names, **attrs)], ins, outs), feeds

    return make


CASES["nll_mean_weight_ignore"] = _nll("mean", True, 2)
CASES["nll_none"] = _nll("none", False)
CASES["nll_sum_ignore"] = _nll("sum", False, 1)
CASES["sce_mean_log_prob"] = _nll("mean", True, sce=True)


def _resize(mode, scales, **attrs):
    def make():
        shape = (1, 2, 4, 5)
        out = tuple(int(np.floor(d * s)) for d, s in zip(shape, scales))
        inits = {"scales": np.array(scales, F32)}
        return (
            model(
                [node("Resize", ["x", "", "scales"], ["y"], mode=mode, **attrs)],
                {"x": (shape, F32)},
                {"y": (out, F32)},
                opset=19,
                inits=inits,
            ),
            {"x": rand(shape, 15)},
        )

    return make


CASES["resize_linear_up"] = _resize("linear", [1, 1, 2.0, 1.5])
CASES["resize_linear_down_antialias"] = _resize("linear", [1, 1, 0.5, 0.6], antialias=1)
CASES["resize_cubic_align_corners"] = _resize(
    "cubic", [1, 1, 1.5, 2.0], coordinate_transformation_mode="align_corners"
)
CASES["resize_nearest"] = _resize("nearest", [1, 1, 2.0, 0.6])


@case("pad_reflect")
def _():
    inits = {"p": np.array([0, 1, 2, 0, 2, 1], np.int64)}
    return (
        model(
            [node("Pad", ["x", "p"], ["y"], mode="reflect")],
            {"x": ((2, 4, 5), F32)},
            {"y": ((2, 7, 8), F32)},
            inits=inits,
        ),
        {"x": rand((2, 4, 5), 16)},
    )


@case("cumsum_reverse_exclusive")
def _():
    inits = {"a": np.array(1, np.int64)}
    return (
        model(
            [node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=1)],
            {"x": ((3, 6, 2), F32)},
            {"y": ((3, 6, 2), F32)},
            inits=inits,
        ),
        {"x": rand((3, 6, 2), 17)},
    )


@case("cumprod_i64_exclusive")
def _():
    inits = {"a": np.array(0, np.int64)}
    return (
        model(
            [node("CumProd", ["x", "a"], ["y"], exclusive=1)],
            {"x": ((5, 3), np.int64)},
            {"y": ((5, 3), np.int64)},
            inits=inits,
            opset=26,
        ),
        {"x": rand((5, 3), 32, -4, 5, np.int64)},
    )


@case("one_hot_axis")
def _():
    inits = {"d": np.array(5, np.int64), "v": np.array([-1.0, 2.0], F32)}
    return (
        model(
            [node("OneHot", ["i", "d", "v"], ["y"], axis=1)],
            {"i": ((3, 4), np.int64)},
            {"y": ((3, 5, 4), F32)},
            inits=inits,
        ),
        {"i": rand((3, 4), 18, -6, 6, np.int64)},
    )


@case("range_i32")
def _():
    inits = {"s": np.array(3, np.int32), "l": np.array(40, np.int32), "d": np.array(4, np.int32)}
    # constant bounds: the passes fold Range; this checks the plan around the folded value
    return (
        model(
            [node("Range", ["s", "l", "d"], ["r"]), node("Add", ["r", "b"], ["y"])],
            {"b": ((10,), np.int32)},
            {"y": ((10,), np.int32)},
            inits=inits,
        ),
        {"b": rand((10,), 19, 0, 5, np.int32)},
    )


@case("scatter_nd_add")
def _():
    inits = {"i": np.array([[1], [3], [1]], np.int64)}
    return (
        model(
            [node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
            {"x": ((5, 3), F32), "u": ((3, 3), F32)},
            {"y": ((5, 3), F32)},
            inits=inits,
        ),
        {"x": rand((5, 3), 20), "u": rand((3, 3), 21)},
    )


@case("scatter_elements_axis1")
def _():
    inits = {"i": np.array([[1, -1], [0, 2], [2, 2]], np.int64)}
    return (
        model(
            [node("ScatterElements", ["x", "i", "u"], ["y"], axis=1)],
            {"x": ((3, 4), F32), "u": ((3, 2), F32)},
            {"y": ((3, 4), F32)},
            inits=inits,
        ),
        {"x": rand((3, 4), 22), "u": rand((3, 2), 23)},
    )


@case("bitcast_f32_i32")
def _():
    return (
        model(
            [node("BitCast", ["x"], ["y"], to=_type(np.int32))],
            {"x": ((7,), F32)},
            {"y": ((7,), np.int32)},
            opset=26,
        ),
        {"x": rand((7,), 24)},
    )


@case("attention_fp16")
def _():
    shapes = {"q": (1, 2, 4, 8), "k": (1, 2, 5, 8), "v": (1, 2, 5, 8)}
    ins = {n: (s, np.float16) for n, s in shapes.items()}
    return (
        model([node("Attention", ["q", "k", "v"], ["y"])], ins, {"y": ((1, 2, 4, 8), np.float16)}),
        {n: rand(s, 25 + i, -1, 1, np.float16) for i, (n, s) in enumerate(shapes.items())},
    )


def _axis_op(op, dtype=F32, **attrs):
    def make():
        x = rand((3, 6, 4), 30, -5, 5, dtype)
        if dtype == F32:
            x[0, 2, 1] = x[0, 4, 1] = 5.0  # ties
        return (
            model(
                [node(op, ["x"], ["y"], **attrs)], {"x": (x.shape, dtype)}, {"y": (x.shape, dtype)}
            ),
            {"x": x},
        )

    return make


CASES["hardmax_axis1"] = _axis_op("Hardmax", axis=1)
CASES["lp_norm_l1"] = _axis_op("LpNormalization", axis=1, p=1)
CASES["lp_norm_l2_last"] = _axis_op("LpNormalization", axis=-1, p=2)


def _topk(largest, dtype):
    def make():
        x = rand((3, 6, 4), 31, -5, 5, dtype)
        x[1, 0, 2] = x[1, 3, 2]
        inits = {"k": np.array([3], np.int64)}
        return (
            model(
                [node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)],
                {"x": (x.shape, dtype)},
                {"v": ((3, 3, 4), dtype), "i": ((3, 3, 4), np.int64)},
                inits=inits,
            ),
            {"x": x},
        )

    return make


CASES["topk_largest_f32"] = _topk(1, F32)
CASES["topk_smallest_i64"] = _topk(0, np.int64)


RTOL, ATOL = 2e-4, 2e-5


def _tol(name):
    return (2e-3, 2e-3) if name.endswith("fp16") else (RTOL, ATOL)


def check(name, on_device):
    """Like gpu_testing.check; the one-byte types (float8, int4, ...) bit for bit."""
    m, feeds = CASES[name]()
    ref = gk.parse_onnx_buffer(m).compile("ref").run(feeds)
    got = run_gpu(m, feeds) if on_device else run_emulated(m, feeds)
    native = [not np.asarray(r).dtype.type.__module__.startswith("ml_dtypes") for r in ref]
    for r, c, plain in zip(ref, got, native):
        if not plain:
            assert c.dtype == r.dtype and c.shape == r.shape
            np.testing.assert_array_equal(
                np.asarray(c).view(np.uint8), np.asarray(r).view(np.uint8)
            )
    compare(
        [c for c, p in zip(got, native) if p], [r for r, p in zip(ref, native) if p], *_tol(name)
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowering_emulated_more(name):
    check(name, on_device=False)


@requires_gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_matches_ref_more(name):
    check(name, on_device=True)
