# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""1-D CNNs on the cpu target: channels-last activations between 1-D convolutions (and 3-D
ones), and the direct depthwise kernel for filters oneDNN would run through gemm (wide and
dilated depthwise filters, 1-D and 2-D), plain and channels-last, against ref."""

import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand

RTOL, ATOL = 1e-4, 1e-5


def _plan(model):
    program = gk.parse_onnx_buffer(model).compile("cpu")
    (segments,) = program._executable._plans.values()
    return [(step, s.plan) for s in segments for step in s.plan.steps]


def _kernels(model):
    return [step.kernel for step, _ in _plan(model)]


def _out_len(length, kernel, stride, dilation, pads):
    return (length + pads[0] + pads[1] - dilation * (kernel - 1) - 1) // stride + 1


DEPTHWISE_1D = [
    # channels, length, kernel, stride, dilation, pads
    (128, 100, 25, 1, 1, (12, 12)),
    (96, 77, 17, 1, 3, (24, 24)),
    (64, 50, 21, 2, 2, (20, 15)),
    (40, 33, 31, 1, 1, (0, 0)),
    (200, 64, 19, 3, 1, (9, 2)),
    (16, 9, 33, 1, 1, (16, 16)),  # wider than the input: most taps read padding
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("c,length,k,stride,dil,pads", DEPTHWISE_1D)
def test_wide_depthwise_1d_plain(c, length, k, stride, dil, pads, bias):
    """A lone depthwise Conv reads and writes the graph's (plain) arrays."""
    out = _out_len(length, k, stride, dil, pads)
    inits = {"w": rand((c, 1, k), 1)}
    names = ["x", "w"]
    if bias:
        inits["b"] = rand((c,), 2)
        names.append("b")
    attrs = dict(group=c, strides=[stride], dilations=[dil], pads=[pads[0], pads[1]])
    model = onnx_model(
        [node("Conv", names, ["y"], **attrs)], {"x": (2, c, length)}, {"y": (2, c, out)}, inits
    )
    check_cpu(model, {"x": rand((2, c, length), 3)}, rtol=RTOL, atol=ATOL)


def _tcn_block(c, length, k, stride, dil, pads):
    """Pointwise -> Relu -> depthwise -> pointwise, the TCN block."""
    out = _out_len(length, k, stride, dil, pads)
    inits = {
        "w1": rand((c, 24, 1), 1),
        "wd": rand((c, 1, k), 2),
        "bd": rand((c,), 3),
        "w2": rand((32, c, 1), 4),
    }
    depthwise = dict(group=c, strides=[stride], dilations=[dil], pads=[pads[0], pads[1]])
    nodes = [
        node("Conv", ["x", "w1"], ["a"]),
        node("Relu", ["a"], ["r"]),
        node("Conv", ["r", "wd", "bd"], ["d"], **depthwise),
        node("Conv", ["d", "w2"], ["y"]),
    ]
    return onnx_model(nodes, {"x": (1, 24, length)}, {"y": (1, 32, out)}, inits)


def _chosen_impls(err: str) -> list[str]:
    """The implementation each Conv step was built with (GRAPHKILN_ONEDNN_IMPL lines)."""
    lines = [line for line in err.splitlines() if line.startswith("Conv ")]
    return [line.split(": ", 1)[1].split(" (")[0] for line in lines]


@pytest.mark.parametrize("c,length,k,stride,dil,pads", DEPTHWISE_1D)
def test_wide_depthwise_1d_between_pointwise_convs(
    c, length, k, stride, dil, pads, capfd, monkeypatch
):
    """Channels-last between the convolutions, and no step left on oneDNN's gemm or
    reference code: where oneDNN has no direct kernel, graphkiln's runs."""
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    model = _tcn_block(c, length, k, stride, dil, pads)
    check_cpu(model, {"x": rand((1, 24, length), 5)}, rtol=RTOL, atol=ATOL)
    impls = _chosen_impls(capfd.readouterr().err)
    assert impls and not any("gemm" in i or "ref" in i for i in impls), impls
    layouts = [plan.slots[step.outputs[0]].layout for step, plan in _plan(model)]
    assert "channels_last" in layouts


def test_tcn_block_runs_graphkiln_depthwise(capfd, monkeypatch):
    """A 25-tap filter over 128 channels: oneDNN 3.2 offers only gemm, so this block is
    known to exercise graphkiln's channels-last depthwise kernel."""
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    model = _tcn_block(128, 100, 25, 1, 1, (12, 12))
    check_cpu(model, {"x": rand((1, 24, 100), 6)}, rtol=RTOL, atol=ATOL)
    assert "graphkiln depthwise" in capfd.readouterr().err


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize(
    "k,stride,dil,pads",
    [
        ((1, 25), (1, 1), (1, 1), (0, 12, 0, 12)),
        ((17, 17), (2, 2), (1, 1), (8, 8, 8, 8)),
        ((13, 21), (1, 2), (2, 1), (12, 10, 11, 9)),
    ],
)
def test_wide_depthwise_2d(k, stride, dil, pads, channels_last):
    c, h, w = 48, 20, 23
    oh = _out_len(h, k[0], stride[0], dil[0], (pads[0], pads[2]))
    ow = _out_len(w, k[1], stride[1], dil[1], (pads[1], pads[3]))
    inits = {"wd": rand((c, 1, *k), 1), "bd": rand((c,), 2)}
    attrs = dict(group=c, strides=list(stride), dilations=list(dil), pads=list(pads))
    if channels_last:  # a 3x3 conv before it makes its input channels-last
        inits["w0"] = rand((c, 8, 3, 3), 3)
        nodes = [
            node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1]),
            node("Conv", ["a", "wd", "bd"], ["d"], **attrs),
            node("Sigmoid", ["d"], ["y"]),
        ]
        x_shape = (2, 8, h, w)
    else:
        nodes = [node("Conv", ["x", "wd", "bd"], ["y"], **attrs)]
        x_shape = (2, c, h, w)
    model = onnx_model(nodes, {"x": x_shape}, {"y": (2, c, oh, ow)}, inits)
    check_cpu(model, {"x": rand(x_shape, 4)}, rtol=RTOL, atol=ATOL)


def test_wide_depthwise_weights_as_graph_input():
    c, length, k = 32, 40, 27
    model = onnx_model(
        [node("Conv", ["x", "w"], ["y"], group=c, pads=[13, 13])],
        {"x": (1, c, length), "w": (c, 1, k)},
        {"y": (1, c, length)},
    )
    check_cpu(model, {"x": rand((1, c, length), 1), "w": rand((c, 1, k), 2)}, rtol=RTOL, atol=ATOL)


def test_wide_depthwise_with_epilogue_stays_correct():
    """A fused epilogue (post-ops) keeps the step on oneDNN; the result is the same."""
    c, length, k = 64, 50, 23
    inits = {"w1": rand((c, 8, 3), 1), "wd": rand((c, 1, k), 2), "bd": rand((c,), 3)}
    nodes = [
        node("Conv", ["x", "w1"], ["a"], pads=[1, 1]),
        node("Conv", ["a", "wd", "bd"], ["d"], group=c, pads=[11, 11]),
        node("Relu", ["d"], ["r"]),
        node("Add", ["r", "a"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (1, 8, length)}, {"y": (1, c, length)}, inits)
    check_cpu(model, {"x": rand((1, 8, length), 4)}, rtol=RTOL, atol=ATOL)


def test_1d_chain_stays_channels_last():
    """Conv1d -> Relu -> Conv1d -> MaxPool1d -> Concat over channels -> GlobalAveragePool:
    one reorder in (the plain graph input), none between the kernels."""
    inits = {
        "w1": rand((32, 16, 5), 1),
        "b1": rand((32,), 2),
        "w2": rand((32, 32, 3), 3),
        "w3": rand((16, 32, 1), 4),
    }
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[2, 2]),
        node("Relu", ["c1"], ["r1"]),
        node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1], strides=[2]),
        node("MaxPool", ["c2"], ["m"], kernel_shape=[3], strides=[2], pads=[1, 1]),
        node("Conv", ["m", "w3"], ["c3"]),
        node("Concat", ["m", "c3"], ["cat"], axis=-2),
        node("GlobalAveragePool", ["cat"], ["g"]),
        node("Flatten", ["g"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (2, 16, 64)}, {"y": (2, 48)}, inits)
    check_cpu(model, {"x": rand((2, 16, 64), 5)}, rtol=RTOL, atol=ATOL)
    plan = _plan(model)
    kernels = [step.kernel for step, _ in plan]
    assert kernels.count("Copy") <= 1, kernels
    assert any(
        p.slots[s.outputs[0]].layout == "channels_last" for s, p in plan if s.kernel == "Pool"
    )


def test_transpose_of_nwc_input_is_a_channels_last_view():
    """[N, W, C] data transposed to [N, C, W] for a Conv1d (how audio and text models feed
    a 1-D CNN): a view, no copy."""
    model = onnx_model(
        [
            node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
            node("Conv", ["t", "w"], ["c"], pads=[1, 1]),
            node("Transpose", ["c"], ["tc"], perm=[0, 2, 1]),
            node("Relu", ["tc"], ["y"]),
        ],
        {"x": (2, 30, 12)},
        {"y": (2, 30, 20)},
        {"w": rand((20, 12, 3), seed=6)},
    )
    check_cpu(model, {"x": rand((2, 30, 12), seed=7)}, rtol=RTOL, atol=ATOL)
    assert "CopyRegions" not in _kernels(model)
