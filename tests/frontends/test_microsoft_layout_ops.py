# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""com.microsoft ops checked against an oracle outside graphkiln, on ref and cpu:
NhwcConv (onnxruntime has no cpu kernel for it: its result must equal onnxruntime's Conv on
the same data channels-first, with the weights laid out as onnxruntime's own fusion,
fusion_nhwc_conv.py, writes them), BiasSplitGelu (cuda only in onnxruntime: numpy), and
GatherBlockQuantized with two 4-bit codes a byte, with and without packed zero points
(onnxruntime's cpu kernel). Its int4 form, as MatMulNBitsQuantizer writes it for an
embedding table, runs in test_onnxruntime_tools.py."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphkiln as gk
from microsoft_models import one_node_model

TARGETS = ["ref", "cpu"]


def _run(model, feeds: dict, target: str) -> np.ndarray:
    program = gk.parse_onnx_buffer(model.SerializeToString(), default_dim=None).compile(target)
    return np.asarray(program.run(feeds)[0])


def _onnxruntime(model, feeds: dict) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _conv_model(x, w, b, attrs):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "form",
    [
        {"pads": [1, 1, 1, 1]},
        {"strides": [2, 2], "pads": [0, 1, 1, 0]},
        {"group": 2, "dilations": [2, 1], "pads": [2, 1, 2, 1]},
    ],
)
def test_nhwc_conv_equals_onnxruntime_conv_channels_first(form, target):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 9, 7)).astype(np.float32)
    w = rng.standard_normal((6, 4 // form.get("group", 1), 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    want = _onnxruntime(_conv_model(x, w, b, form), {"x": x}).transpose(0, 2, 3, 1)
    x_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    w_last = np.ascontiguousarray(w.transpose(0, 2, 3, 1))  # as fusion_nhwc_conv.py writes it
    model, feeds = one_node_model(
        "NhwcConv", ["x", "w", "b"], ["y"], {"x": x_last}, {"w": w_last, "b": b}, form
    )
    got = _run(model, feeds, target)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("target", TARGETS)
def test_bias_split_gelu_is_left_half_times_gelu_of_right_half(target):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 16)).astype(np.float32) * 2
    bias = rng.standard_normal(16).astype(np.float32)
    model, feeds = one_node_model("BiasSplitGelu", ["x", "b"], ["y"], {"x": x}, {"b": bias})
    got = _run(model, feeds, target)
    h = (x + bias).astype(np.float64)
    left, right = h[..., :8], h[..., 8:]
    erf = np.vectorize(math.erf)
    want = left * right * 0.5 * (1.0 + erf(right / math.sqrt(2.0)))
    assert got.shape == (2, 5, 8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_bias_split_gelu_with_an_odd_hidden_size_is_refused():
    x = np.ones((1, 2, 5), np.float32)
    model, _ = one_node_model(
        "BiasSplitGelu", ["x", "b"], ["y"], {"x": x}, {"b": np.ones(5, np.float32)}
    )
    with pytest.raises(gk.UnsupportedOperatorError, match="odd"):
        gk.parse_onnx_buffer(model.SerializeToString())


def _gather_quantized(zero_points: bool, block: int = 16):
    rng = np.random.default_rng(5)
    vocab, k = 20, 64
    consts = {
        "data": rng.integers(0, 256, (vocab, k // 2)).astype(np.uint8),
        "scales": rng.uniform(0.01, 0.1, (vocab, k // block)).astype(np.float32),
    }
    inputs = ["data", "ids", "scales"]
    if zero_points:
        consts["zero_points"] = rng.integers(0, 256, (vocab, k // block // 2)).astype(np.uint8)
        inputs.append("zero_points")
    ids = rng.integers(0, vocab, (3, 5)).astype(np.int64)
    attrs = {"block_size": block, "gather_axis": 0, "quantize_axis": 1, "bits": 4}
    model, feeds = one_node_model(
        "GatherBlockQuantized", inputs, ["y"], {"ids": ids}, consts, attrs
    )
    model.opset_import[0].version = 21  # onnxruntime registers the op's kernel with IR >= 9
    model.ir_version = 10
    return model, feeds


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("zero_points", [True, False])
def test_gather_block_quantized_packed_bytes_match_onnxruntime(zero_points, target):
    model, feeds = _gather_quantized(zero_points)
    want = _onnxruntime(model, feeds)
    got = _run(model, feeds, target)
    assert got.shape == want.shape == (3, 5, 64)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_gather_block_quantized_bits_other_than_4_are_refused():
    model, _ = _gather_quantized(False)
    for a in model.graph.node[0].attribute:
        if a.name == "bits":
            a.i = 8
    with pytest.raises(gk.UnsupportedOperatorError, match="bits=8"):
        gk.parse_onnx_buffer(model.SerializeToString())
