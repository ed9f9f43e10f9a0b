# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu target's DFT, STFT, MelWeightMatrix (targets/native/lower_signal.py, src/cpu/dft.cpp,
mel_weight.cpp) and Col2Im (lower_col2im.py, src/cpu/col2im.cpp) against ref: forward /
inverse / onesided / irfft transforms on several axes, dft_length shorter and longer than
the axis, power-of-two and odd lengths, float32 and float64; STFT with and without a
window; Col2Im over 2 and 3 spatial dims with pads, strides and dilations; parameters as
constants and as graph inputs (plans per value); refusals that say why."""

import types

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.ir import DType, Node, TensorType, Value
from graphkiln.targets.native import lower_col2im, lower_signal
from graphkiln.targets.native.lower import LoweringError

from cpu_testing import check_cpu, node, onnx_model, rand

FLOATS = [np.float32, np.float64]


def scalar(v):
    return np.array(v, dtype=np.int64)


# -- DFT ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "shape,axis,inverse,onesided,length",
    [
        ((2, 8, 3, 1), 1, 0, 0, None),  # real, power of two
        ((2, 7, 3, 2), 1, 0, 0, None),  # complex, odd
        ((2, 6, 5, 2), 2, 1, 0, None),  # inverse
        ((3, 9, 1), -2, 0, 1, None),  # onesided, odd
        ((2, 8, 4, 1), 1, 0, 1, None),  # onesided, power of two
        ((2, 8, 3, 2), 1, 0, 0, 5),  # dft_length shorter than the axis
        ((2, 6, 3, 2), -3, 1, 0, 11),  # longer, inverse
        ((2, 6, 3, 1), 1, 0, 0, 16),  # longer, power of two
        ((2, 5, 3, 2), 1, 1, 1, None),  # irfft: length 2 * (5 - 1)
        ((2, 5, 3, 2), 1, 1, 1, 7),  # irfft, odd length
        ((2, 5, 3, 2), 1, 1, 1, 12),  # irfft, bins padded
        ((4, 3, 2), 0, 0, 0, 6),  # axis 0, complex
    ],
)
def test_dft(shape, axis, inverse, onesided, length, dtype):
    x = rand(shape, seed=len(shape) + shape[1], dtype=dtype)
    inits = {"axis": scalar(axis)}
    if length is not None:
        inits["n"] = scalar(length)
    inputs = ["x", "n" if length is not None else "", "axis"]
    model = onnx_model(
        [node("DFT", inputs, ["y"], inverse=inverse, onesided=onesided)],
        {"x": shape},
        {"y": None},
        inits,
        opset=20,
        dtypes={"x": dtype, "y": dtype},
    )
    check_cpu(model, {"x": x})


def test_dft_opset17_axis_attribute():
    x = rand((3, 4, 10, 1), seed=3)
    model = onnx_model(
        [node("DFT", ["x"], ["y"], axis=2, onesided=1)], {"x": x.shape}, {"y": None}, opset=17
    )
    check_cpu(model, {"x": x})


def test_dft_axis_and_length_as_graph_inputs():
    """Run-time axis / dft_length values: the cpu target plans per value."""
    x = rand((2, 6, 5, 2), seed=4)
    model = onnx_model(
        [node("DFT", ["x", "n", "axis"], ["y"], inverse=1)],
        {"x": x.shape, "n": (), "axis": ()},
        {"y": None},
        opset=20,
        dtypes={"n": np.int64, "axis": np.int64},
    )
    for n, axis in ((6, 1), (9, 2), (4, -2)):
        check_cpu(model, {"x": x, "n": scalar(n), "axis": scalar(axis)})


def test_dft_large_lines_run_in_parallel():
    x = rand((64, 256, 1), seed=5)
    model = onnx_model([node("DFT", ["x"], ["y"])], {"x": x.shape}, {"y": None}, opset=17)
    check_cpu(model, {"x": x}, atol=1e-5)


# -- STFT -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "length,parts,step,frame,window,onesided",
    [
        (64, 1, 8, 16, False, 1),  # frame_length only
        (64, 1, 8, None, True, 1),  # the window gives the frame
        (50, 1, 7, 12, True, 0),  # both, two-sided
        (40, 2, 5, 9, True, 0),  # complex signal, odd frame
        (33, 1, 4, None, False, 1),  # one frame of the whole signal
    ],
)
def test_stft(length, parts, step, frame, window, onesided, dtype):
    x = rand((2, length, parts), seed=length, dtype=dtype)
    feeds, shapes = {"x": x}, {"x": x.shape}
    inits = {"step": scalar(step)}
    if frame is not None:
        inits["frame"] = scalar(frame)
    if window:
        w = rand((frame or 16,), seed=9, dtype=dtype, low=0.1, high=1.0)
        feeds["w"], shapes["w"] = w, w.shape
    inputs = ["x", "step", "w" if window else "", "frame" if frame is not None else ""]
    model = onnx_model(
        [node("STFT", inputs, ["y"], onesided=onesided)],
        shapes,
        {"y": None},
        inits,
        opset=17,
        dtypes={"x": dtype, "w": dtype, "y": dtype},
    )
    check_cpu(model, feeds)


# -- MelWeightMatrix ------------------------------------------------------------------------
@pytest.mark.parametrize("out_dtype", [1, 11])  # ONNX FLOAT, DOUBLE
@pytest.mark.parametrize(
    "bins,n_fft,rate,low,high", [(8, 16, 8192, 0.0, 4096.0), (10, 64, 16000, 30.0, 7000.0)]
)
def test_mel_weight_matrix(bins, n_fft, rate, low, high, out_dtype):
    names = ["bins", "n_fft", "rate", "low", "high"]
    ints = {k: np.array(v, np.int32) for k, v in zip(names[:3], (bins, n_fft, rate))}
    floats = {"low": np.float32(low), "high": np.float32(high)}
    out = np.float32 if out_dtype == 1 else np.float64
    model = onnx_model(
        [node("MelWeightMatrix", names, ["y"], output_datatype=out_dtype)],
        {k: () for k in names},
        {"y": None},
        dtypes={**{k: np.int32 for k in ints}, "y": out},
        opset=17,
    )
    y = check_cpu(model, {**ints, **floats}, rtol=0, atol=0)
    assert np.asarray(y[0]).any()


# -- Col2Im ---------------------------------------------------------------------------------
def col2im_input(image, block, dilations, strides, pads, channels=2, batch=2):
    n = len(image)
    counts = [
        (image[i] + pads[i] + pads[i + n] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1
        for i in range(n)
    ]
    return (batch, channels * int(np.prod(block)), int(np.prod(counts)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "image,block,dilations,strides,pads",
    [
        ((5, 5), (2, 3), (1, 1), (1, 1), (0, 0, 0, 0)),
        ((6, 7), (3, 2), (2, 1), (1, 2), (1, 0, 2, 1)),
        ((8, 6), (3, 3), (1, 2), (2, 1), (1, 1, 1, 1)),
        ((4, 5, 6), (2, 2, 3), (1, 1, 2), (1, 2, 1), (0, 1, 1, 0, 1, 2)),
        ((3, 4, 5), (1, 1, 5), (1, 1, 1), (1, 1, 1), (0, 0, 0, 0, 0, 0)),
    ],
)
def test_col2im(image, block, dilations, strides, pads, dtype):
    shape = col2im_input(image, block, dilations, strides, pads)
    x = rand(shape, seed=sum(shape), dtype=dtype)
    model = onnx_model(
        [
            node(
                "Col2Im",
                ["x", "image", "block"],
                ["y"],
                dilations=dilations,
                strides=strides,
                pads=pads,
            )
        ],
        {"x": shape},
        {"y": None},
        {"image": np.array(image, np.int64), "block": np.array(block, np.int64)},
        opset=18,
        dtypes={"x": dtype, "y": dtype},
    )
    check_cpu(model, {"x": x})


def test_col2im_shapes_as_graph_inputs():
    shape = col2im_input((5, 5), (1, 5), (1, 1), (1, 1), (0, 1, 0, 1), channels=1, batch=1)
    x = rand(shape, seed=11)
    model = onnx_model(
        [node("Col2Im", ["x", "image", "block"], ["y"], pads=[0, 1, 0, 1])],
        {"x": shape, "image": (2,), "block": (2,)},
        {"y": None},
        opset=18,
        dtypes={"image": np.int64, "block": np.int64},
    )
    feeds = {"x": x, "image": np.array([5, 5], np.int64), "block": np.array([1, 5], np.int64)}
    check_cpu(model, feeds, rtol=0, atol=0)


# -- refusals -------------------------------------------------------------------------------
def _constant(name, array):
    value = Value(name, TensorType(DType.from_numpy(array.dtype), array.shape))
    value.producer = Node("Constant", [], [value], {"value": array})
    return value


def _dft_node(dtype=DType.f32, axis_constant=True):
    x = Value("x", TensorType(dtype, (2, 8, 1)))
    axis = Value("axis", TensorType(DType.i64, ()))
    if axis_constant:
        axis = _constant("axis", np.array(1, np.int64))
    y = Value("y", TensorType(dtype, (2, 8, 2)))
    return Node("DFT", [x, None, axis], [y], {"inverse": 0, "onesided": 0})


@pytest.mark.parametrize(
    "kw,reason",
    [
        ({"axis_constant": False}, "axis is not a constant at lowering"),
        ({"dtype": DType.f16}, "the kernel takes f32 and f64"),
    ],
)
def test_dft_refusals_say_why(kw, reason):
    n = _dft_node(**kw)
    assert reason in (lower_signal.refusal(n) or "")
    assert lower_signal.refusal(_dft_node()) is None
    with pytest.raises(LoweringError, match=reason):
        lower_signal.lower_dft(n, types.SimpleNamespace(target="cpu"))


def test_col2im_refuses_a_run_time_block_shape():
    x = Value("x", TensorType(DType.f32, (1, 5, 5)))
    image = _constant("image", np.array([5, 5], np.int64))
    block = Value("block", TensorType(DType.i64, (2,)))
    y = Value("y", TensorType(DType.f32, (1, 1, 5, 5)))
    n = Node("Col2Im", [x, image, block], [y], {})
    assert lower_col2im.refusal(n) == "block_shape is not a constant at lowering"
    with pytest.raises(LoweringError, match="block_shape is not a constant"):
        lower_col2im.lower_col2im(n, types.SimpleNamespace(target="cpu"))


def test_stft_refuses_a_window_of_another_length():
    x = rand((1, 64, 1), seed=2)
    w = rand((12,), seed=3)
    model = onnx_model(
        [node("STFT", ["x", "step", "w", "frame"], ["y"])],
        {"x": x.shape, "w": w.shape},
        {"y": None},
        {"step": scalar(8), "frame": scalar(16)},
        opset=17,
    )
    with pytest.raises(gk.GraphkilnError):
        gk.parse_onnx_buffer(model).compile("cpu").run({"x": x, "w": w})
