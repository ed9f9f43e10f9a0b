# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ConvTranspose on cpu against ref: weights (and bias) as graph inputs run the direct kernel
(ConvTransposeDirect: 1-3 spatial dims, groups, dilations, strides, pads, output_padding,
output_shape, auto_pad); constant weights keep oneDNN's deconvolution ("ConvTranspose")."""

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand


def _kernels(model: bytes) -> list[str]:
    program = gk.parse_onnx_buffer(model).compile("cpu")
    plans = list(program._executable._plans.values())
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


def _model(x_shape, w_shape, y_shape, attrs, bias, constant_w=False, extra=()):
    group = attrs.get("group", 1)
    inputs = {"x": x_shape}
    inits = {}
    if constant_w:
        inits["w"] = rand(w_shape, 1)
    else:
        inputs["w"] = w_shape
    names = ["x", "w"]
    if bias:
        inputs["b"] = (w_shape[1] * group,)
        names.append("b")
    out = "y" if not extra else "c"
    nodes = [node("ConvTranspose", names, [out], **attrs), *extra]
    return onnx_model(nodes, inputs, {"y": y_shape}, inits)


def _feeds(x_shape, w_shape, attrs, bias, constant_w=False):
    feeds = {"x": rand(x_shape, 0)}
    if not constant_w:
        feeds["w"] = rand(w_shape, 1)
    if bias:
        feeds["b"] = rand((w_shape[1] * attrs.get("group", 1),), 2)
    return feeds


# x, w, y (None: ref's shape), attrs
CASES = [
    ((1, 1, 3), (1, 2, 3), (1, 2, 5), {}),
    ((2, 3, 7), (3, 4, 4), (2, 4, 19), {"strides": [3], "pads": [1, 2]}),
    ((1, 1, 3, 3), (1, 2, 3, 3), (1, 2, 5, 5), {}),
    ((2, 4, 5, 6), (4, 3, 3, 2), (2, 3, 9, 10), {"strides": [2, 2], "pads": [1, 0, 0, 1]}),
    ((1, 2, 3, 3), (2, 1, 3, 3), (1, 2, 5, 5), {"group": 2}),
    ((3, 6, 4, 5), (6, 2, 3, 3), (3, 6, 9, 9), {"group": 3, "strides": [2, 2], "pads": [1] * 4}),
    ((1, 2, 4, 4), (2, 3, 2, 3), (1, 3, 6, 8), {"dilations": [2, 3]}),
    ((1, 3, 4, 5), (3, 2, 3, 3), (1, 2, 10, 12), {"strides": [3, 2], "output_padding": [1, 2]}),
    ((1, 1, 3, 3), (1, 2, 3, 3), (1, 2, 10, 8), {"strides": [3, 2], "output_shape": [10, 8]}),
    # output_shape larger than the full result: negative pads, the extra is zeros
    ((1, 2, 3, 3), (2, 2, 3, 3), (1, 2, 9, 12), {"strides": [2, 2], "output_shape": [9, 12]}),
    ((1, 2, 3, 4), (2, 2, 3, 3), (1, 2, 6, 8), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 3, 4), (2, 2, 4, 3), (1, 2, 6, 8), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 3, 4), (2, 2, 3, 3), (1, 2, 7, 9), {"strides": [2, 2], "auto_pad": "VALID"}),
    ((1, 1, 3, 4, 5), (1, 2, 3, 3, 3), (1, 2, 5, 6, 7), {}),
    (
        (2, 4, 3, 3, 2),
        (4, 1, 2, 3, 2),
        (2, 2, 7, 5, 5),
        {"group": 2, "strides": [2, 1, 2], "dilations": [2, 1, 1], "output_padding": [1, 0, 0]},
    ),
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("x_shape,w_shape,y_shape,attrs", CASES)
def test_run_time_weights(x_shape, w_shape, y_shape, attrs, bias):
    model = _model(x_shape, w_shape, y_shape, attrs, bias)
    assert _kernels(model) == ["ConvTransposeDirect"]
    check_cpu(model, _feeds(x_shape, w_shape, attrs, bias))


def test_constant_weights_keep_onednn():
    attrs = {"strides": [2, 2], "pads": [1, 1, 1, 1]}
    model = _model((1, 4, 5, 5), (4, 3, 3, 3), (1, 3, 9, 9), attrs, True, constant_w=True)
    assert _kernels(model) == ["ConvTranspose"]
    check_cpu(model, _feeds((1, 4, 5, 5), (4, 3, 3, 3), attrs, True, constant_w=True))


def test_constant_weights_with_output_shape_run_direct():
    """oneDNN takes no negative end pad: the direct kernel reads the constant weights."""
    attrs = {"strides": [2, 2], "output_shape": [12, 11]}
    model = _model((1, 4, 5, 5), (4, 3, 3, 3), (1, 3, 12, 11), attrs, False, constant_w=True)
    assert _kernels(model) == ["ConvTransposeDirect"]
    check_cpu(model, _feeds((1, 4, 5, 5), (4, 3, 3, 3), attrs, False, constant_w=True))


def test_run_time_weights_with_epilogue():
    """A Fused conv of run-time weights runs node by node: the direct kernel, then Relu."""
    relu = node("Relu", ["c"], ["y"])
    attrs = {"strides": [2, 2]}
    model = _model((1, 2, 4, 4), (2, 3, 3, 3), (1, 3, 9, 9), attrs, True, extra=[relu])
    assert _kernels(model)[0] == "ConvTransposeDirect"
    check_cpu(model, _feeds((1, 2, 4, 4), (2, 3, 3, 3), attrs, True))


def test_kernel_shape_differing_from_w_is_refused():
    attrs = {"kernel_shape": [2, 2]}
    model = _model((1, 1, 3, 3), (1, 2, 3, 3), (1, 2, 5, 5), attrs, False)
    with pytest.raises(Exception, match="ConvTranspose"):
        gk.parse_onnx_buffer(model).compile("cpu")


def test_saved_plan_round_trip():
    """A saved plan's ConvTransposeDirect step loads (checked against its contract) and runs."""
    attrs = {"group": 2, "strides": [2, 1], "output_shape": [9, 7]}
    model = _model((1, 4, 4, 5), (4, 3, 3, 3), (1, 6, 9, 7), attrs, True)
    feeds = _feeds((1, 4, 4, 5), (4, 3, 3, 3), attrs, True)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    want = program.run(feeds)
    got = gk.load_buffer(gk.save_buffer(program)).run(feeds)
    oracle = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[0], oracle[0], rtol=1e-5, atol=1e-5)
