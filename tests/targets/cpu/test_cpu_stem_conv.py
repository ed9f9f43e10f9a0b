# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A CNN's first convolution (few input channels, plain image in, channels-last maps out) on
graphkiln's direct stem kernel (src/cpu/stem_conv.cpp): against ref over window sizes 1-7,
strides 1-4, asymmetric and wide pads, odd image sizes, batches, output channel counts (24
and more) that are not multiples of 16 or take several passes, no bias, a bias computed by
the graph, and the epilogues it fuses (relu, leaky relu, clip, hardswish, hardsigmoid, a
closing swish); steps it does not serve stay on oneDNN; the same values with it turned off
(GRAPHKILN_CPU_STEM=0), from concurrent runs and after a save / load round trip."""

import threading

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand

RTOL, ATOL = 1e-5, 1e-6


def _has_avx512() -> bool:
    """Whether this CPU has the AVX-512 F/DQ/BW/VL the kernel is built for."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return all(f in flags for f in ("avx512f", "avx512dq", "avx512bw", "avx512vl"))


def _stem_steps(err: str) -> list[str]:
    return [line for line in err.splitlines() if "graphkiln stem" in line]


def _stem(batch, c, k, kernel, stride, pads, h, w, bias="constant", epilogue="relu"):
    """x (plain) -> Conv (c -> k) [-> epilogue] -> 1x1 Conv (k -> 8): the 1x1 convolution makes
    the layout analysis keep the tested convolution's output channels-last."""
    kh, kw = kernel
    oh = (h + pads[0] + pads[2] - kh) // stride + 1
    ow = (w + pads[1] + pads[3] - kw) // stride + 1
    inits = {"w1": rand((k, c, kh, kw), 1) * (2 / (kh * kw * c)) ** 0.5}
    inputs = {"x": (batch, c, h, w)}
    conv = ["x", "w1"]
    nodes = []
    if bias == "constant":
        inits["b1"] = rand((k,), 2)
        conv.append("b1")
    elif bias == "computed":  # a bias the graph computes from an input: not a constant
        inputs["t"] = (k,)
        nodes.append(node("Mul", ["t", "t"], ["b1"]))
        conv.append("b1")
    out = "e" if epilogue == "none" else "c"
    nodes.append(node("Conv", conv, [out], pads=list(pads), strides=[stride, stride]))
    if epilogue == "relu":
        nodes.append(node("Relu", ["c"], ["e"]))
    elif epilogue == "leaky_relu":
        nodes.append(node("LeakyRelu", ["c"], ["e"], alpha=0.1))
    elif epilogue == "relu6":
        inits["lo"], inits["hi"] = np.float32(0.0), np.float32(6.0)
        nodes.append(node("Clip", ["c", "lo", "hi"], ["e"]))
    elif epilogue == "hardswish":
        nodes.append(node("HardSwish", ["c"], ["e"]))
    elif epilogue == "hardsigmoid":
        nodes.append(node("HardSigmoid", ["c"], ["e"], alpha=0.25, beta=0.4))
    elif epilogue == "swish":  # EfficientNet's SiLU
        nodes += [node("Sigmoid", ["c"], ["s"]), node("Mul", ["c", "s"], ["e"])]
    elif epilogue == "relu_swish":  # an op in the loop, then swish after the row
        nodes += [
            node("Relu", ["c"], ["r"]),
            node("Sigmoid", ["r"], ["s"]),
            node("Mul", ["r", "s"], ["e"]),
        ]
    inits["w2"] = rand((8, k, 1, 1), 6) * k**-0.5
    nodes.append(node("Conv", ["e", "w2"], ["y"]))
    model = onnx_model(nodes, inputs, {"y": (batch, 8, oh, ow)}, inits)
    feeds = {name: rand(shape, 10 + i) for i, (name, shape) in enumerate(inputs.items())}
    return model, feeds


CASES = [
    # batch, c, k, kernel, stride, pads (top, left, bottom, right), h, w, bias, epilogue
    (1, 3, 64, (3, 3), 2, (0, 0, 0, 0), 45, 45, "constant", "relu"),  # SqueezeNet
    (1, 3, 32, (3, 3), 2, (1, 1, 1, 1), 38, 41, "constant", "relu6"),  # MobileNetV2
    (1, 3, 24, (3, 3), 2, (1, 1, 1, 1), 33, 30, "constant", "hardswish"),  # MobileNetV3-like
    (1, 3, 32, (3, 3), 2, (1, 1, 1, 1), 32, 32, "constant", "swish"),  # EfficientNet
    (2, 3, 64, (7, 7), 2, (3, 3, 3, 3), 29, 31, "constant", "relu"),  # ResNet
    (1, 3, 96, (4, 4), 4, (0, 0, 0, 0), 36, 44, "constant", "none"),  # ConvNeXt: two passes
    (1, 3, 24, (3, 3), 2, (1, 1, 1, 1), 27, 25, "none", "leaky_relu"),  # ShuffleNet
    (3, 1, 40, (5, 5), 1, (2, 0, 1, 3), 17, 19, "computed", "hardsigmoid"),
    (1, 4, 100, (3, 3), 3, (4, 4, 4, 4), 20, 23, "constant", "relu_swish"),  # wide pads
    (1, 8, 136, (1, 1), 1, (0, 0, 0, 0), 9, 13, "constant", "relu"),
    (1, 2, 72, (6, 2), 2, (0, 1, 0, 0), 16, 7, "constant", "none"),  # passes of 4 + 1 vectors
]


@pytest.mark.parametrize("batch,c,k,kernel,stride,pads,h,w,bias,epilogue", CASES)
def test_stem_matches_ref(
    batch, c, k, kernel, stride, pads, h, w, bias, epilogue, capfd, monkeypatch
):
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    model, feeds = _stem(batch, c, k, kernel, stride, pads, h, w, bias, epilogue)
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)
    steps = _stem_steps(capfd.readouterr().err)
    if not _has_avx512():
        pytest.skip("this CPU has no AVX-512: every Conv stays on oneDNN")
    assert len(steps) == 1, steps
    assert f"{c} -> {k} channels, {kernel[0]}x{kernel[1]} window" in steps[0]
    assert ("+ swish" in steps[0]) == (epilogue in ("swish", "relu_swish"))


@pytest.mark.parametrize(
    "c,k,kernel,group",
    [
        (9, 32, (3, 3), 1),  # more input channels than a stem's
        (3, 16, (3, 3), 1),  # fewer maps than it pays for
        (3, 768, (16, 16), 1),  # a ViT's patches: 2.4 MB of packed weights
        (4, 16, (3, 3), 2),  # grouped
    ],
)
def test_not_chosen_outside_its_range(c, k, kernel, group, capfd, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    stride = kernel[0] if kernel[0] > 3 else 1
    h = 32
    oh = (h - kernel[0]) // stride + 1
    inits = {
        "w1": rand((k, c // group, *kernel), 1) * 0.1,
        "w2": rand((8, k, 1, 1), 2) * k**-0.5,
    }
    nodes = [
        node("Conv", ["x", "w1"], ["c"], strides=[stride, stride], group=group),
        node("Relu", ["c"], ["e"]),
        node("Conv", ["e", "w2"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (1, c, h, h)}, {"y": (1, 8, oh, oh)}, inits)
    check_cpu(model, {"x": rand((1, c, h, h), 3)}, rtol=1e-4, atol=1e-5)
    assert not _stem_steps(capfd.readouterr().err)


def test_turned_off_gives_the_same_values(capfd, monkeypatch):
    model, feeds = _stem(2, 3, 48, (3, 3), 2, (1, 1, 1, 1), 40, 40)
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    on = gk.parse_onnx_buffer(model).compile("cpu").run(feeds)[0]
    monkeypatch.setenv("GRAPHKILN_CPU_STEM", "0")
    capfd.readouterr()
    off = check_cpu(model, feeds, rtol=RTOL, atol=ATOL)[0]
    assert not _stem_steps(capfd.readouterr().err)
    np.testing.assert_allclose(on, off, rtol=1e-5, atol=1e-6 * float(np.abs(off).max()))


def test_concurrent_runs():
    model, _ = _stem(2, 3, 64, (3, 3), 2, (1, 1, 1, 1), 48, 48, "computed", "hardswish")
    program = gk.parse_onnx_buffer(model).compile("cpu")
    ref = gk.parse_onnx_buffer(model).compile("ref")
    inputs = [{"x": rand((2, 3, 48, 48), 100 + i), "t": rand((64,), 200 + i)} for i in range(6)]
    expected = [ref.run(f)[0] for f in inputs]
    errors = []

    def worker(i):
        try:
            for _ in range(5):
                got = program.run(inputs[i])[0]
                scale = float(np.abs(expected[i]).max())
                np.testing.assert_allclose(got, expected[i], rtol=RTOL, atol=ATOL * scale)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_saved_program_keeps_the_packed_weights(tmp_path):
    model, feeds = _stem(1, 3, 40, (5, 5), 2, (2, 2, 2, 2), 30, 30)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    expected = program.run(feeds)[0]
    path = tmp_path / "stem.gkp"
    gk.save(program, path)
    loaded = gk.load(path)
    np.testing.assert_array_equal(loaded.run(feeds)[0], expected)
