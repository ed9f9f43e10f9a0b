# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Conv steps with their epilogue (targets/gpu/lower_conv_epilogue.py, src/gpu/conv_cudnn.hip).

Here, through the numpy model of the kernels: a Fused conv body Conv -> Relu, Conv -> Add,
Conv -> Add -> Relu becomes one Conv step (attribute activation, residual as input 3) and
computes what ref computes; other bodies keep their Pointwise steps.
On the device (marked gpu): every attribute variant (pads, asymmetric pads, strides,
dilations, groups, depthwise, 1x1, 1-D, with and without bias) with and without the fused
residual + ReLU, in float32, float16 and bfloat16, against ref; cuDNN on against
GRAPHKILN_GPU_CUDNN=0 (conv.hip's kernel + the epilogue kernel); GRAPHKILN_GPU_CUDNN_VERBOSE
shows that cuDNN ran.

Tolerances, relative to the largest reference magnitude (gpu_testing.compare): float32 1e-4
(cuDNN runs float32 with FMA math, no TF32: only the summation order differs), float16 1e-2,
bfloat16 5e-2 (as test_gpu_precision.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

import graphkiln as gk
from gpu_testing import compare, requires_gpu
from test_gpu_ops_more import model, rand
from test_gpu_precision import HALF, emulate, reference, steps

node = helper.make_node
F32 = np.float32
TOL = {"f32": 1e-4, "fp16": 1e-2, "bf16": 5e-2}
OPTIONS = {"f32": {}, "fp16": {"fp16": True}, "bf16": {"bf16": True}}

# name -> (x shape, w shape, y shape, bias, Conv attributes)
VARIANTS = {
    "3x3_pad": ((2, 8, 12, 12), (16, 8, 3, 3), (2, 16, 12, 12), True, {"pads": [1, 1, 1, 1]}),
    "3x3_stride2": (
        (2, 8, 13, 13),
        (16, 8, 3, 3),
        (2, 16, 7, 7),
        True,
        {"pads": [1, 1, 1, 1], "strides": [2, 2]},
    ),
    "dilated": (
        (2, 4, 14, 14),
        (8, 4, 3, 3),
        (2, 8, 14, 14),
        True,
        {"pads": [2, 2, 2, 2], "dilations": [2, 2]},
    ),
    "grouped": (
        (2, 8, 10, 10),
        (12, 4, 3, 3),
        (2, 12, 10, 10),
        True,
        {"pads": [1, 1, 1, 1], "group": 2},
    ),
    "depthwise": (
        (2, 8, 10, 10),
        (8, 1, 3, 3),
        (2, 8, 10, 10),
        True,
        {"pads": [1, 1, 1, 1], "group": 8},
    ),
    "1x1_no_bias": ((2, 16, 7, 7), (32, 16, 1, 1), (2, 32, 7, 7), False, {}),
    "1x1_stride2": ((2, 16, 8, 8), (32, 16, 1, 1), (2, 32, 4, 4), True, {"strides": [2, 2]}),
    "7x7_stem": (
        (1, 3, 32, 32),
        (8, 3, 7, 7),
        (1, 8, 16, 16),
        True,
        {"pads": [3, 3, 3, 3], "strides": [2, 2]},
    ),
    # trailing pads that add no output row: cuDNN takes them (leading pads only)
    "asym_pads_same_rows": (
        (1, 4, 9, 9),
        (8, 4, 3, 3),
        (1, 8, 4, 4),
        True,
        {"pads": [0, 0, 1, 1], "strides": [2, 2]},
    ),
    # leading pads > trailing ones change the row count: conv.hip's kernel runs
    "asym_pads_fallback": ((1, 4, 9, 9), (8, 4, 3, 3), (1, 8, 8, 8), False, {"pads": [1, 1, 0, 0]}),
    "rect_kernel": ((2, 4, 11, 9), (6, 4, 3, 5), (2, 6, 11, 9), True, {"pads": [1, 2, 1, 2]}),
    "conv1d": ((2, 4, 20), (6, 4, 5), (2, 6, 20), True, {"pads": [2, 2]}),
}
EPILOGUES = ("none", "relu", "add", "add_relu", "residual_first_relu")


def conv_model(variant: str, epilogue: str, seed: int = 0):
    """(onnx model, feeds). As in a resnet block, the residual is another convolution's output
    (a 1x1 one over its own input) and a 1x1 convolution reads the result: with fp16 / bf16
    both then stay in half (the Cast back to float32 at the graph's output follows the last
    convolution, not the epilogue under test)."""
    x_shape, w_shape, y_shape, bias, attrs = VARIANTS[variant]
    inits = {"w": rand(w_shape, seed + 1, -0.5, 0.5)}
    conv_inputs = ["x", "w"]
    if bias:
        inits["b"] = rand((w_shape[0],), seed + 2)
        conv_inputs.append("b")
    nodes = [node("Conv", conv_inputs, ["c"], **attrs)]
    inputs = {"x": (x_shape, F32)}
    feeds = {"x": rand(x_shape, seed + 3)}
    last = "c"
    if epilogue in ("add", "add_relu", "residual_first_relu"):
        r_shape = (y_shape[0], 3, *y_shape[2:])
        inits["wr"] = rand((y_shape[1], 3) + (1,) * (len(y_shape) - 2), seed + 4, -0.5, 0.5)
        nodes.append(node("Conv", ["r_in", "wr"], ["r"]))
        inputs["r_in"] = (r_shape, F32)
        feeds["r_in"] = rand(r_shape, seed + 5)
        pair = ["r", "c"] if epilogue == "residual_first_relu" else ["c", "r"]
        nodes.append(node("Add", pair, ["s"]))
        last = "s"
    if epilogue in ("relu", "add_relu", "residual_first_relu"):
        nodes.append(node("Relu", [last], ["out"]))
        last = "out"
    inits["wt"] = rand((5, y_shape[1]) + (1,) * (len(y_shape) - 2), seed + 6, -0.5, 0.5)
    nodes.append(node("Conv", [last, "wt"], ["y"]))
    out_shape = (y_shape[0], 5, *y_shape[2:])
    return model(nodes, inputs, {"y": (out_shape, F32)}, inits=inits), feeds


# -- the lowering, through the numpy model of the kernels ---------------------------------
@pytest.mark.parametrize("epilogue", EPILOGUES[1:])
@pytest.mark.parametrize("precision", ["f32", "fp16", "bf16"])
def test_epilogue_becomes_one_conv_step(epilogue, precision):
    onnx_model, feeds = conv_model("3x3_pad", epilogue)
    got, executable = emulate(onnx_model, feeds, **OPTIONS[precision])
    compare(got, reference(onnx_model, feeds), TOL[precision], TOL[precision])
    if precision == "f32":  # (half plans keep the Casts at the graph's edges)
        assert not steps(executable, "Pointwise")
    convs = steps(executable, "Conv")
    relu = epilogue != "add"
    fused = [
        s
        for s in convs
        if s["attrs"].get("activation") == ("relu" if relu else None)
        and len(s["inputs"]) == (4 if "add" in epilogue or "residual" in epilogue else 3)
    ]
    assert len(fused) == 1, [(s["attrs"].get("activation"), len(s["inputs"])) for s in convs]
    if precision != "f32":  # the convolutions ran in half (the edges' Casts are Pointwise)
        assert {t["dtype"] for s in convs for t in s["inputs"] if t} == {HALF[precision]}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variants_with_residual_relu_emulated(variant):
    onnx_model, feeds = conv_model(variant, "add_relu")
    got, executable = emulate(onnx_model, feeds)
    compare(got, reference(onnx_model, feeds), TOL["f32"], TOL["f32"])
    fused = [
        s
        for s in steps(executable, "Conv")
        if s["attrs"].get("activation") == "relu" and len(s["inputs"]) == 4
    ]
    assert len(fused) == 1
    assert not steps(executable, "Pointwise")


def test_other_epilogues_keep_their_pointwise_steps():
    x_shape, w_shape, y_shape = (1, 4, 8, 8), (6, 4, 3, 3), (1, 6, 8, 8)
    inits = {"w": rand(w_shape, 1, -0.5, 0.5), "k": rand((1, 6, 1, 1), 2)}
    nodes = [
        node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        node("Add", ["c", "k"], ["s"]),  # broadcast: not a residual
        node("Sigmoid", ["s"], ["y"]),
    ]
    onnx_model = model(nodes, {"x": (x_shape, F32)}, {"y": (y_shape, F32)}, inits=inits)
    feeds = {"x": rand(x_shape, 3)}
    got, executable = emulate(onnx_model, feeds)
    compare(got, reference(onnx_model, feeds), TOL["f32"], TOL["f32"])
    assert steps(executable, "Pointwise")
    assert all("activation" not in s["attrs"] for s in steps(executable, "Conv"))


def test_conv_output_read_twice_is_not_fused():
    """Relu(c) and c itself are both graph outputs: the Conv step must still write c."""
    x_shape, w_shape, y_shape = (1, 4, 8, 8), (6, 4, 3, 3), (1, 6, 8, 8)
    nodes = [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["y"])]
    onnx_model = model(
        nodes,
        {"x": (x_shape, F32)},
        {"y": (y_shape, F32), "c": (y_shape, F32)},
        inits={"w": rand(w_shape, 1, -0.5, 0.5)},
    )
    feeds = {"x": rand(x_shape, 3)}
    got, _ = emulate(onnx_model, feeds)
    compare(got, reference(onnx_model, feeds), TOL["f32"], TOL["f32"])
    assert (got[1] < 0).any()  # the raw convolution kept its negative values


# -- on the device --------------------------------------------------------------------------
def _run(onnx_model, feeds, monkeypatch, cudnn: bool, precision: str):
    monkeypatch.setenv("GRAPHKILN_GPU_CUDNN", "1" if cudnn else "0")
    return gk.parse_onnx_buffer(onnx_model).compile("gpu", **OPTIONS[precision]).run(feeds)


@requires_gpu
@pytest.mark.parametrize("precision", ["f32", "fp16", "bf16"])
@pytest.mark.parametrize("epilogue", ["none", "add_relu"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_device_conv_variants(variant, epilogue, precision, monkeypatch):
    onnx_model, feeds = conv_model(variant, epilogue)
    got = _run(onnx_model, feeds, monkeypatch, True, precision)
    compare(got, reference(onnx_model, feeds), TOL[precision], TOL[precision])


@requires_gpu
@pytest.mark.parametrize("precision", ["f32", "fp16", "bf16"])
@pytest.mark.parametrize("epilogue", EPILOGUES)
def test_device_epilogues_cudnn_on_and_off(epilogue, precision, monkeypatch):
    onnx_model, feeds = conv_model("3x3_stride2", epilogue, seed=10)
    expected = reference(onnx_model, feeds)
    on = _run(onnx_model, feeds, monkeypatch, True, precision)
    off = _run(onnx_model, feeds, monkeypatch, False, precision)
    compare(on, expected, TOL[precision], TOL[precision])
    compare(off, expected, TOL[precision], TOL[precision])
    compare(on, off, TOL[precision], TOL[precision])


@requires_gpu
@pytest.mark.parametrize("precision", ["f32", "fp16"])
def test_device_cudnn_runs_the_fused_step(precision, monkeypatch, capfd):
    """With the NVIDIA build and cuDNN found, cuDNN runs the steps and accepts the fused
    Conv + residual + ReLU call (skipped where cuDNN is not found: the AMD build, a machine
    without libcudnn)."""
    monkeypatch.setenv("GRAPHKILN_GPU_CUDNN_VERBOSE", "1")
    onnx_model, feeds = conv_model("3x3_pad", "add_relu", seed=20)
    got = _run(onnx_model, feeds, monkeypatch, True, precision)
    compare(got, reference(onnx_model, feeds), TOL[precision], TOL[precision])
    err = capfd.readouterr().err
    if "graphkiln cuDNN conv" not in err:
        pytest.skip("cuDNN is not used by this build (AMD or no libcudnn.so.9)")
    # the fused call ran in the build-time trials (status 0 after an algorithm marked f); the
    # faster of fused and plain + epilogue kernel is kept, which may be either for tiny shapes
    assert re.search(r" \d+f:0\b", err), err


@requires_gpu
def test_device_relu_keeps_nan_free_zeros(monkeypatch):
    """Negative sums become exactly 0 and positive ones are kept, in every path."""
    onnx_model, feeds = conv_model("1x1_no_bias", "relu", seed=30)
    expected = reference(onnx_model, feeds)[0]
    for cudnn in (True, False):
        got = _run(onnx_model, feeds, monkeypatch, cudnn, "f32")[0]
        assert np.all(got[expected == 0] == 0) and np.all(np.isfinite(got))
        compare([got], [expected], TOL["f32"], TOL["f32"])


@requires_gpu
@pytest.mark.parametrize("variant", ["3x3_pad", "3x3_stride2", "7x7_stem", "1x1_no_bias"])
def test_device_every_cudnn_algorithm_candidate(variant, monkeypatch):
    """GRAPHKILN_GPU_CUDNN_CANDIDATES=8 times every algorithm cuDNN offers (FFT, Winograd,
    GEMM...): whichever wins must still compute the convolution."""
    monkeypatch.setenv("GRAPHKILN_GPU_CUDNN_CANDIDATES", "8")
    onnx_model, feeds = conv_model(variant, "add_relu", seed=40)
    got = _run(onnx_model, feeds, monkeypatch, True, "f32")
    compare(got, reference(onnx_model, feeds), TOL["f32"], TOL["f32"])


@requires_gpu
def test_device_fast_math_conv(monkeypatch):
    """fast_math lets float32 convolutions use TF32 (10 mantissa bits): within 5e-3, as
    test_gpu_precision.py's fast_math cases."""
    monkeypatch.setenv("GRAPHKILN_GPU_CUDNN", "1")
    onnx_model, feeds = conv_model("3x3_pad", "add_relu", seed=50)
    got = gk.parse_onnx_buffer(onnx_model).compile("gpu", fast_math=True).run(feeds)
    compare(got, reference(onnx_model, feeds), 5e-3, 5e-3)
