# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Reductions (Reduce*, ArgMax/ArgMin), Softmax / LogSoftmax, LayerNormalization and Fused
reduce nodes (a pointwise prologue / epilogue around the reduction)."""

import numpy as np
import pytest

import graphkiln as gk
from cpu_testing import check_cpu, node, onnx_model, rand

REDUCE = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
]


def _out_shape(shape, axes, keepdims):
    if axes is None:
        axes = range(len(shape))
    axes = {a % len(shape) for a in axes}
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_model(op, shape, axes, keepdims=1, dtype=np.float32, noop=0):
    inputs = ["x"] if axes is None else ["x", "axes"]
    inits = {} if axes is None else {"axes": np.array(axes, np.int64)}
    out = shape if (noop and not axes) else _out_shape(shape, axes or None, keepdims)
    return onnx_model(
        [node(op, inputs, ["y"], keepdims=keepdims, noop_with_empty_axes=noop)],
        {"x": shape},
        {"y": out},
        inits,
        opset=18,
        dtypes={"x": dtype, "y": dtype},
    )


def _data(op, shape, dtype=np.float32, seed=0):
    if op in ("ReduceLogSum", "ReduceProd"):
        return rand(shape, seed, dtype, 0.5, 1.5)
    return rand(shape, seed, dtype, -2, 2)


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize(
    "shape,axes",
    [
        ((4, 5, 300), [-1]),
        ((4, 5, 300), [1]),
        ((4, 5, 300), [0]),
        ((4, 5, 300), [0, 2]),
        ((4, 5, 300), [1, 2]),
        ((4, 5, 300), None),
        ((2, 16, 7, 9), [2, 3]),
        ((3, 40, 20), [0, 1]),
        ((6, 1, 5), [1]),
    ],
)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce(op, shape, axes, keepdims):
    x = _data(op, shape)
    model = _reduce_model(op, shape, axes, keepdims)
    rtol = 1e-4 if op == "ReduceProd" else 1e-5
    check_cpu(model, {"x": x}, rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("op", REDUCE)
def test_reduce_noop_with_empty_axes(op):
    model = _reduce_model(op, (3, 4), [], noop=1)
    check_cpu(model, {"x": _data(op, (3, 4))})
    model = _reduce_model(op, (3, 4), None, noop=1)
    check_cpu(model, {"x": _data(op, (3, 4))})


@pytest.mark.parametrize(
    "op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceSumSquare"]
)
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_reduce_integers(op, dtype):
    x = rand((3, 20, 7), 0, dtype, -5, 5)
    if op == "ReduceProd":
        x = rand((3, 6, 7), 0, dtype, -3, 4)
    model = _reduce_model(op, x.shape, [1], 0, dtype)
    check_cpu(model, {"x": x})


def test_reduce_float64():
    for op in REDUCE:
        model = _reduce_model(op, (4, 50), [1], 1, np.float64)
        check_cpu(model, {"x": _data(op, (4, 50), np.float64)})


@pytest.mark.parametrize(
    "op,x_shape,axes,keepdims",
    [
        ("ReduceMean", (2, 8, 14, 14), [2, 3], 1),
        ("ReduceMean", (2, 8, 14, 14), [-1, -2], 0),
        ("ReduceMax", (2, 8, 14, 14), [2, 3], 1),
        ("ReduceMean", (2, 8, 1, 14), [3], 1),  # a spatial dim of 1 needs no reducing
        ("ReduceMean", (2, 8, 50), [2], 0),  # 1-D
        ("ReduceMean", (2, 8, 14, 14), [3], 1),  # one of two spatial axes: not a global pool
        ("ReduceSum", (2, 8, 14, 14), [2, 3], 1),
    ],
)
def test_reduce_channels_last_input(op, x_shape, axes, keepdims):
    """A global pool written as a reduction over a Conv's (channels-last) output, the
    squeeze-and-excitation of timm-style models: mean and max over every spatial axis run
    as the GlobalPool kernel; other reductions stay Reduce steps."""
    k = len(x_shape) - 2
    w = rand((32, 8) + (3,) * k, 3)
    out_shape = [d for d in (x_shape[0], 32, *x_shape[2:])]
    for a in axes:
        out_shape[a] = 1
    if not keepdims:
        out_shape = [
            d for i, d in enumerate(out_shape) if i not in {a % len(x_shape) for a in axes}
        ]
    model = onnx_model(
        [
            node("Conv", ["x", "w"], ["c"], pads=[1] * (2 * k)),
            node(op, ["c", "axes"], ["y"], keepdims=keepdims),
        ],
        {"x": x_shape},
        {"y": tuple(out_shape)},
        {"w": w, "axes": np.array(axes, np.int64)},
    )
    check_cpu(model, {"x": rand(x_shape)}, rtol=1e-4, atol=1e-5)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    (segments,) = program._executable._plans.values()
    kernels = [step.kernel for seg in segments for step in seg.plan.steps]
    spatial = [a % len(x_shape) for a in axes]
    is_global = op != "ReduceSum" and sorted(
        set(spatial) | {i for i in range(2, len(x_shape)) if x_shape[i] == 1}
    ) == list(range(2, len(x_shape)))
    assert ("GlobalPool" in kernels) == is_global, kernels


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reduce(op, axis, keepdims, last):
    shape = (4, 6, 50)
    x = rand(shape, 0, np.int64, -3, 3).astype(np.float32)  # ties
    out = _out_shape(shape, [axis], keepdims)
    model = onnx_model(
        [node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=last)],
        {"x": shape},
        {"y": out},
        dtypes={"y": np.int64},
    )
    check_cpu(model, {"x": x})
    model = onnx_model(
        [node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=last)],
        {"x": shape},
        {"y": out},
        dtypes={"x": np.int64, "y": np.int64},
    )
    check_cpu(model, {"x": x.astype(np.int64)})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize(
    "shape,axis",
    [
        ((8, 128), -1),
        ((2, 12, 64, 64), -1),
        ((3, 1000), 1),
        ((2, 5, 7), 1),
        ((4, 6, 30), 0),
        ((5, 3), -1),
        ((2, 3, 50, 17), 2),
    ],
)
def test_softmax(op, shape, axis):
    model = onnx_model([node(op, ["x"], ["y"], axis=axis)], {"x": shape}, {"y": shape})
    check_cpu(model, {"x": rand(shape, 0, low=-10, high=10)}, rtol=1e-5, atol=1e-6)


def test_softmax_masked_rows():
    x = rand((4, 33), 0, low=-5, high=5)
    x[0, :] = -np.inf
    x[1, :5] = -np.inf
    x[2, :] = -1e30
    model = onnx_model([node("Softmax", ["x"], ["y"], axis=-1)], {"x": (4, 33)}, {"y": (4, 33)})
    ref = gk.parse_onnx_buffer(model).compile("ref").run({"x": x})[0]
    cpu = gk.parse_onnx_buffer(model).compile("cpu").run({"x": x})[0]
    np.testing.assert_allclose(cpu, ref, rtol=1e-5, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize(
    "shape,axis", [((4, 16, 768), -1), ((2, 3, 8, 10), 2), ((5, 64), 0), ((3, 7), -1)]
)
@pytest.mark.parametrize("bias", [True, False])
def test_layernorm(shape, axis, bias):
    tail = shape[axis % len(shape) :]
    inits = {"s": rand(tail, 1), "b": rand(tail, 2)}
    inputs = ["x", "s", "b"] if bias else ["x", "s"]
    if not bias:
        del inits["b"]
    model = onnx_model(
        [node("LayerNormalization", inputs, ["y"], axis=axis, epsilon=1e-3)],
        {"x": shape},
        {"y": shape},
        inits,
        opset=17,
    )
    check_cpu(model, {"x": rand(shape, 0, low=-3, high=5)}, rtol=1e-4, atol=1e-5)


def test_layernorm_broadcast_scale_and_stats():
    shape = (2, 6, 8)
    model = onnx_model(
        [node("LayerNormalization", ["x", "s", "b"], ["y", "m", "r"], axis=1)],
        {"x": shape},
        {"y": shape, "m": (2, 1, 1), "r": (2, 1, 1)},
        {"s": rand((1, 8), 1), "b": rand((8,), 2)},
        opset=17,
    )
    check_cpu(model, {"x": rand(shape)}, rtol=1e-4, atol=1e-5)


def test_layernorm_input_scale():
    model = onnx_model(
        [node("LayerNormalization", ["x", "s"], ["y"], axis=-1)],
        {"x": (4, 100), "s": (100,)},
        {"y": (4, 100)},
        opset=17,
    )
    check_cpu(model, {"x": rand((4, 100)), "s": rand((100,), 1)}, rtol=1e-4, atol=1e-5)


def test_fused_prologue_and_epilogue():
    # (x * 2 + b) -> ReduceSum over the last axis -> Sqrt: one Fused node of kind reduce
    model = onnx_model(
        [
            node("Mul", ["x", "two"], ["a"]),
            node("Add", ["a", "b"], ["c"]),
            node("ReduceSumSquare", ["c", "axes"], ["r"], keepdims=1),
            node("Sqrt", ["r"], ["s"]),
            node("Mul", ["s", "g"], ["y"]),
        ],
        {"x": (6, 40, 30), "g": (6, 40, 1)},
        {"y": (6, 40, 1)},
        {"two": np.array(2.0, np.float32), "b": rand((30,), 3), "axes": np.array([-1], np.int64)},
        opset=18,
    )
    check_cpu(model, {"x": rand((6, 40, 30)), "g": rand((6, 40, 1), 4)}, rtol=1e-5)


def test_fused_softmax_with_scale_and_mask():
    # attention-like: (q * scale + mask) -> Softmax -> Cast-free epilogue Mul
    shape = (2, 4, 16, 16)
    model = onnx_model(
        [
            node("Mul", ["x", "k"], ["a"]),
            node("Add", ["a", "mask"], ["b"]),
            node("Softmax", ["b"], ["p"], axis=-1),
            node("Mul", ["p", "d"], ["y"]),
        ],
        {"x": shape, "mask": (2, 1, 1, 16)},
        {"y": shape},
        {"k": np.array(0.125, np.float32), "d": np.array(0.5, np.float32)},
    )
    mask = np.where(rand((2, 1, 1, 16), 5) > 0.5, -1e9, 0).astype(np.float32)
    check_cpu(model, {"x": rand(shape, 0, low=-8, high=8), "mask": mask})


def test_fused_layernorm_epilogue():
    shape = (3, 10, 64)
    model = onnx_model(
        [
            node("Add", ["x", "r"], ["a"]),
            node("LayerNormalization", ["a", "s", "b"], ["n"], axis=-1),
            node("Relu", ["n"], ["y"]),
        ],
        {"x": shape, "r": shape},
        {"y": shape},
        {"s": rand((64,), 1), "b": rand((64,), 2)},
        opset=17,
    )
    check_cpu(model, {"x": rand(shape), "r": rand(shape, 3)}, rtol=1e-4, atol=1e-5)


def test_layernorm_from_primitive_ops():
    # the ReduceMean / Sub / Pow / Sqrt / Div pattern a recognizer turns into one node
    shape = (2, 9, 48)
    model = onnx_model(
        [
            node("ReduceMean", ["x", "ax"], ["m"], keepdims=1),
            node("Sub", ["x", "m"], ["d"]),
            node("Pow", ["d", "two"], ["d2"]),
            node("ReduceMean", ["d2", "ax"], ["v"], keepdims=1),
            node("Add", ["v", "eps"], ["ve"]),
            node("Sqrt", ["ve"], ["sd"]),
            node("Div", ["d", "sd"], ["n"]),
            node("Mul", ["n", "s"], ["ns"]),
            node("Add", ["ns", "b"], ["y"]),
        ],
        {"x": shape},
        {"y": shape},
        {
            "ax": np.array([-1], np.int64),
            "two": np.array(2.0, np.float32),
            "eps": np.array(1e-5, np.float32),
            "s": rand((48,), 1),
            "b": rand((48,), 2),
        },
        opset=18,
    )
    check_cpu(model, {"x": rand(shape)}, rtol=1e-4, atol=1e-5)


def test_reduce_empty_axis():
    for op in ("ReduceSum", "ReduceMax", "ReduceProd"):
        model = _reduce_model(op, (3, 0, 4), [1], 1)
        check_cpu(model, {"x": np.zeros((3, 0, 4), np.float32)})
