# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Conv on the cpu target (oneDNN): 1-D/2-D/3-D, groups and depthwise, strides, dilations,
pads and auto_pad, bias, weights as graph inputs, channels-last chains and fused epilogues
(post-ops, bias folds, residual add, a squeeze-excitation Mul)."""

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.targets.cpu import table

from cpu_testing import check_cpu, node, onnx_model, rand

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def fused_dispatch(monkeypatch):
    """Fused nodes go to lower_fused.py (another module); until it exists, a stand-in
    that sends kind conv to lower_conv."""
    if "Fused" in table.LOWERINGS:
        yield
        return
    from graphkiln.targets.cpu.lower_conv import fused_conv_supported, lower_fused_conv
    from graphkiln.targets.native.lower_support import supports

    @supports(lambda n: n.attrs["kind"] == "conv" and fused_conv_supported(n))
    def lower_fused(n, ctx):
        lower_fused_conv(n, ctx)

    monkeypatch.setitem(table.LOWERINGS, "Fused", lower_fused)
    yield


def conv_model(x_shape, w_shape, y_shape, bias=True, w_input=False, seed=0, post=(), **attrs):
    inits = {}
    inputs = {"x": x_shape}
    names = ["x", "w"]
    if w_input:
        inputs["w"] = w_shape
    else:
        inits["w"] = rand(w_shape, seed + 1)
    if bias:
        inits["b"] = rand((w_shape[0],), seed + 2)
        names.append("b")
    nodes = [node("Conv", names, ["c" if post else "y"], **attrs)]
    last = "c"
    for i, (op, extra, kw) in enumerate(post):
        out = "y" if i == len(post) - 1 else f"p{i}"
        nodes.append(node(op, [last, *extra], [out], **kw))
        last = out
    return onnx_model(nodes, inputs, {"y": y_shape}, inits)


def run_check(model, feeds, **options):
    return check_cpu(model, feeds, rtol=RTOL, atol=ATOL, **options)


def ref_shape(model, feeds):
    return gk.parse_onnx_buffer(model).compile("ref").run(feeds)[0].shape


CASES = [
    # x, w, attrs
    ((1, 3, 16, 16), (8, 3, 3, 3), {}),
    ((2, 8, 12, 10), (16, 8, 1, 1), {}),
    ((1, 16, 14, 14), (32, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 16, 15, 15), (32, 16, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 16, 15, 13), (16, 16, 3, 3), {"pads": [0, 1, 2, 1], "strides": [2, 1]}),
    ((1, 16, 14, 14), (16, 16, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    ((1, 16, 14, 14), (32, 4, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),
    ((2, 32, 14, 14), (32, 1, 3, 3), {"group": 32, "pads": [1, 1, 1, 1]}),
    ((1, 32, 15, 15), (32, 1, 5, 5), {"group": 32, "pads": [2, 2, 2, 2], "strides": [2, 2]}),
    ((1, 32, 16, 16), (64, 1, 3, 3), {"group": 32, "pads": [1, 1, 1, 1]}),  # multiplier 2
    ((1, 3, 32, 32), (16, 3, 7, 7), {"pads": [3, 3, 3, 3], "strides": [2, 2]}),
    ((1, 8, 15, 15), (16, 8, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 8, 14, 14), (16, 8, 4, 4), {"auto_pad": "SAME_LOWER"}),
    ((1, 8, 14, 14), (16, 8, 4, 4), {"auto_pad": "SAME_UPPER"}),
    ((1, 8, 14, 14), (16, 8, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}),
    ((2, 8, 20), (12, 8, 3), {"pads": [1, 2]}),  # 1-D
    ((1, 8, 30), (8, 1, 5), {"group": 8, "strides": [2], "dilations": [2]}),
    ((1, 4, 6, 7, 8), (8, 4, 3, 3, 3), {"pads": [1, 1, 1, 1, 1, 1]}),  # 3-D
    (
        (1, 8, 6, 6, 6),
        (8, 2, 3, 3, 3),
        {"group": 4, "strides": [2, 2, 2], "auto_pad": "SAME_UPPER"},
    ),
    ((1, 1, 9, 9), (4, 1, 3, 3), {}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_variants(x_shape, w_shape, attrs, bias):
    from graphkiln.ir.ops.conv import window_geometry

    _, _, out = window_geometry(
        x_shape[2:],
        w_shape[2:],
        attrs.get("strides"),
        attrs.get("dilations"),
        attrs.get("pads"),
        attrs.get("auto_pad", "NOTSET"),
    )
    y_shape = (x_shape[0], w_shape[0], *out)
    model = conv_model(x_shape, w_shape, y_shape, bias=bias, **attrs)
    run_check(model, {"x": rand(x_shape)})


@pytest.mark.parametrize("group", [1, 4])
def test_weights_as_graph_input(group):
    x_shape, w_shape = (1, 8, 10, 10), (8, 8 // group, 3, 3)
    model = conv_model(
        x_shape, w_shape, (1, 8, 10, 10), w_input=True, group=group, pads=[1, 1, 1, 1]
    )
    run_check(model, {"x": rand(x_shape), "w": rand(w_shape, 5)})


def test_channels_last_chain():
    """Conv -> Relu -> Conv -> MaxPool -> GlobalAveragePool -> Flatten."""
    inits = {
        "w1": rand((16, 3, 3, 3), 1),
        "b1": rand((16,), 2),
        "w2": rand((32, 16, 3, 3), 3),
        "b2": rand((32,), 4),
    }
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"]),
        node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        node("MaxPool", ["c2"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("GlobalAveragePool", ["m"], ["g"]),
        node("Flatten", ["g"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (2, 3, 32, 32)}, {"y": (2, 32)}, inits)
    run_check(model, {"x": rand((2, 3, 32, 32))})


EPILOGUES = [
    [("Relu", [], {})],
    [("LeakyRelu", [], {"alpha": 0.1})],
    [("Sigmoid", [], {})],
    [("Tanh", [], {})],
    [("HardSwish", [], {})],
    [("HardSigmoid", [], {"alpha": 0.3, "beta": 0.4})],
    [("Gelu", [], {})],
    [("Gelu", [], {"approximate": "tanh"})],
    [("Elu", [], {"alpha": 0.7})],
    [("Exp", [], {})],
    [("Clip", ["lo", "hi"], {})],
    [("Clip", ["", "hi"], {})],
    [("Add", ["pc"], {}), ("Relu", [], {})],  # per-channel constant: bias fold
    [("Relu", [], {}), ("Mul", ["pc"], {})],  # per-channel binary
    [("Mul", ["sc"], {}), ("Add", ["sc"], {})],  # scalar constants
    [("Sub", ["sc"], {}), ("Div", ["pc"], {})],
    [("Max", ["pc"], {}), ("Min", ["full"], {})],
    [("Add", ["res"], {}), ("Relu", [], {})],  # residual add of a graph input
    [("Relu", [], {}), ("Add", ["res"], {}), ("Sigmoid", [], {})],
]


def _operands(out_shape):
    c = out_shape[1]
    return {
        "lo": np.array(-0.2, np.float32),
        "hi": np.array(0.3, np.float32),
        "pc": rand((c, 1, 1), 7, low=0.5, high=1.5),
        "sc": np.array(1.7, np.float32),
        "full": rand(out_shape, 8),
    }


@pytest.mark.parametrize("post", EPILOGUES, ids=lambda p: "-".join(op for op, _, _ in p))
def test_fused_epilogue(post):
    x_shape, w_shape, y_shape = (1, 8, 10, 10), (16, 8, 3, 3), (1, 16, 10, 10)
    ops = _operands(y_shape)
    inits = {"w": rand(w_shape, 1), "b": rand((16,), 2)}
    inputs = {"x": x_shape}
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])]
    last = "c"
    for i, (op, extra, kw) in enumerate(post):
        for name in extra:
            if name == "res":
                inputs["res"] = y_shape
            elif name:
                inits[name] = ops[name]
        out = "y" if i == len(post) - 1 else f"p{i}"
        nodes.append(node(op, [last, *extra], [out], **kw))
        last = out
    model = onnx_model(nodes, inputs, {"y": y_shape}, inits)
    feeds = {"x": rand(x_shape)}
    if "res" in inputs:
        feeds["res"] = rand(y_shape, 9)
    run_check(model, feeds)


@pytest.mark.parametrize("op", ["Sub", "Div"])
def test_fused_operand_order(op):
    """other - conv and other / conv."""
    inits = {
        "w": rand((16, 8, 1, 1), 1),
        "b": rand((16,), 2) + 3.0,
        "k": rand((16, 1, 1), 3, low=1, high=2),
    }
    nodes = [node("Conv", ["x", "w", "b"], ["c"]), node(op, ["k", "c"], ["y"])]
    model = onnx_model(nodes, {"x": (1, 8, 6, 6)}, {"y": (1, 16, 6, 6)}, inits)
    run_check(model, {"x": rand((1, 8, 6, 6), low=0, high=0.1)})


def test_fused_residual_channels_last():
    """The residual operand is itself a channels-last conv output."""
    inits = {"w1": rand((16, 8, 3, 3), 1), "w2": rand((16, 16, 3, 3), 2), "b2": rand((16,), 3)}
    nodes = [
        node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        node("Relu", ["a"], ["r"]),
        node("Conv", ["r", "w2", "b2"], ["c"], pads=[1, 1, 1, 1]),
        node("Add", ["c", "r"], ["s"]),
        node("Relu", ["s"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (2, 8, 12, 12)}, {"y": (2, 16, 12, 12)}, inits)
    run_check(model, {"x": rand((2, 8, 12, 12))})


def test_swish_epilogue():
    inits = {"w": rand((16, 8, 3, 3), 1), "b": rand((16,), 2)}
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("Sigmoid", ["c"], ["s"]),
        node("Mul", ["c", "s"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (1, 8, 10, 10)}, {"y": (1, 16, 10, 10)}, inits)
    run_check(model, {"x": rand((1, 8, 10, 10))})


def test_squeeze_excitation_mul():
    """An SE block: the gate conv's output (N, C, 1, 1) broadcasts over the feature map."""
    inits = {
        "w0": rand((16, 8, 3, 3), 1),
        "w1": rand((4, 16, 1, 1), 2),
        "b1": rand((4,), 3),
        "w2": rand((16, 4, 1, 1), 4),
        "b2": rand((16,), 5),
    }
    nodes = [
        node("Conv", ["x", "w0"], ["f"], pads=[1, 1, 1, 1]),
        node("Relu", ["f"], ["fr"]),
        node("GlobalAveragePool", ["fr"], ["g"]),
        node("Conv", ["g", "w1", "b1"], ["h"]),
        node("Relu", ["h"], ["hr"]),
        node("Conv", ["hr", "w2", "b2"], ["e"]),
        node("HardSigmoid", ["e"], ["gate"], alpha=1 / 6, beta=0.5),
        node("Mul", ["gate", "fr"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (1, 8, 10, 10)}, {"y": (1, 16, 10, 10)}, inits)
    run_check(model, {"x": rand((1, 8, 10, 10))})


def test_epilogue_reading_the_conv_twice():
    """relu(c) + c: the conv result is read by two epilogue nodes (a pointwise kernel)."""
    inits = {"w": rand((16, 8, 3, 3), 1), "b": rand((16,), 2)}
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("Relu", ["c"], ["r"]),
        node("Add", ["r", "c"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (1, 8, 10, 10)}, {"y": (1, 16, 10, 10)}, inits)
    run_check(model, {"x": rand((1, 8, 10, 10))})


def test_non_f32_is_refused():
    model = onnx_model(
        [node("Conv", ["x", "w"], ["y"])],
        {"x": (1, 2, 5, 5)},
        {"y": (1, 2, 3, 3)},
        {"w": rand((2, 2, 3, 3), dtype=np.float64)},
        dtypes={"x": np.float64, "y": np.float64},
    )
    with pytest.raises(Exception, match="Conv"):
        gk.parse_onnx_buffer(model).compile("cpu")
    check_cpu(model, {"x": rand((1, 2, 5, 5), dtype=np.float64)}, fallback="ref")


DECONV = [
    ((1, 8, 5, 5), (8, 4, 3, 3), {}),
    ((2, 8, 5, 6), (8, 4, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 8, 5, 5), (8, 4, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 8, 5, 5), (8, 2, 3, 3), {"group": 2, "strides": [2, 2]}),
    ((1, 8, 5, 5), (8, 4, 3, 3), {"dilations": [2, 2], "pads": [1, 0, 2, 1]}),
    ((1, 8, 7), (8, 3, 3), {"strides": [2], "auto_pad": "SAME_UPPER"}),
    ((1, 4, 3, 4, 5), (4, 2, 2, 2, 2), {"strides": [2, 2, 2]}),
    (
        (1, 8, 5, 5),
        (8, 4, 3, 3),
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
    ),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", DECONV)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose(x_shape, w_shape, attrs, bias):
    inits = {"w": rand(w_shape, 1)}
    names = ["x", "w"]
    group = attrs.get("group", 1)
    if bias:
        inits["b"] = rand((w_shape[1] * group,), 2)
        names.append("b")
    model = onnx_model(
        [node("ConvTranspose", names, ["y"], **attrs)], {"x": x_shape}, {"y": None}, inits
    )
    check_cpu(model, {"x": rand(x_shape)}, rtol=RTOL, atol=ATOL)


def test_bias_as_graph_input_with_constant_add():
    """B is not constant: the per-channel constant Add stays a post-op."""
    inits = {"w": rand((16, 8, 3, 3), 1), "k": rand((16, 1, 1), 3)}
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("Add", ["c", "k"], ["a"]),
        node("Relu", ["a"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (1, 8, 9, 9), "b": (16,)}, {"y": (1, 16, 9, 9)}, inits)
    run_check(model, {"x": rand((1, 8, 9, 9)), "b": rand((16,), 4)})


def test_clip_with_crossed_bounds():
    inits = {
        "w": rand((16, 8, 1, 1), 1),
        "lo": np.array(0.5, np.float32),
        "hi": np.array(-0.5, np.float32),
    }
    nodes = [node("Conv", ["x", "w"], ["c"]), node("Clip", ["c", "lo", "hi"], ["y"])]
    model = onnx_model(nodes, {"x": (1, 8, 5, 5)}, {"y": (1, 16, 5, 5)}, inits)
    run_check(model, {"x": rand((1, 8, 5, 5))})


def test_conv_transpose_with_epilogue():
    inits = {"w": rand((8, 4, 3, 3), 1), "b": rand((4,), 2)}
    nodes = [
        node("ConvTranspose", ["x", "w", "b"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("Relu", ["c"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (1, 8, 5, 5)}, {"y": (1, 4, 9, 9)}, inits)
    run_check(model, {"x": rand((1, 8, 5, 5))})


def test_conv_transpose_negative_end_pad_runs_the_direct_kernel():
    """output_padding without pads: the end pad oneDNN would need is negative, so the
    direct kernel runs it (lower_conv_transpose.py; test_cpu_deconv.py has more)."""
    inits = {"w": rand((8, 4, 3, 3), 1)}
    nodes = [node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_padding=[1, 1])]
    model = onnx_model(nodes, {"x": (1, 8, 5, 5)}, {"y": (1, 4, 12, 12)}, inits)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    (segments,) = program._executable._plans.values()
    assert [step.kernel for s in segments for step in s.plan.steps] == ["ConvTransposeDirect"]
    run_check(model, {"x": rand((1, 8, 5, 5))})


def test_conv_transpose_in_channels_last_chain():
    inits = {
        "w1": rand((16, 8, 3, 3), 1),
        "w2": rand((16, 8, 4, 4), 2),
        "b2": rand((8,), 3),
        "w3": rand((4, 8, 3, 3), 4),
    }
    nodes = [
        node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        node("Relu", ["a"], ["r"]),
        node("ConvTranspose", ["r", "w2", "b2"], ["t"], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("Relu", ["t"], ["tr"]),
        node("Conv", ["tr", "w3"], ["y"], pads=[1, 1, 1, 1]),
    ]
    model = onnx_model(nodes, {"x": (1, 8, 8, 8)}, {"y": (1, 4, 16, 16)}, inits)
    run_check(model, {"x": rand((1, 8, 8, 8))})
