# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A closing swish (x * sigmoid(x)) of a float convolution or matmul runs as our own loop
after the oneDNN primitive (src/cpu/swish_tail.cpp), not as oneDNN's swish post-op: checked
against ref on EfficientNet-style blocks (expand, depthwise, squeeze-excitation, project),
channel counts that fill no vector, channels-last outputs, swish that is not the last op,
the Swish op with alpha, matmuls, two threads and concurrent runs."""

import threading

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand

RTOL, ATOL = 1e-4, 1e-5


def swish(x, out, tag):
    return [node("Sigmoid", [x], [f"{tag}_s"]), node("Mul", [x, f"{tag}_s"], [out])]


def mbconv_model(c_in, c_mid, size, stride, batch=1):
    """Expand 1x1 + swish, depthwise 3x3 + swish, squeeze-excitation with a swish, project
    1x1 (+ residual when the shapes allow), as EfficientNet's blocks are."""
    squeeze = max(1, c_in // 4)
    out_size = (size + stride - 1) // stride
    inits = {
        "we": rand((c_mid, c_in, 1, 1), 1, low=-0.5, high=0.5),
        "be": rand((c_mid,), 2),
        "wd": rand((c_mid, 1, 3, 3), 3),
        "bd": rand((c_mid,), 4),
        "w1": rand((squeeze, c_mid, 1, 1), 5),
        "b1": rand((squeeze,), 6),
        "w2": rand((c_mid, squeeze, 1, 1), 7),
        "b2": rand((c_mid,), 8),
        "wp": rand((c_in, c_mid, 1, 1), 9, low=-0.3, high=0.3),
        "bp": rand((c_in,), 10),
    }
    nodes = [node("Conv", ["x", "we", "be"], ["e"])]
    nodes += swish("e", "es", "e")
    nodes += [
        node("Conv", ["es", "wd", "bd"], ["d"], group=c_mid, pads=[1] * 4, strides=[stride] * 2)
    ]
    nodes += swish("d", "ds", "d")
    nodes += [node("GlobalAveragePool", ["ds"], ["g"]), node("Conv", ["g", "w1", "b1"], ["q"])]
    nodes += swish("q", "qs", "q")
    nodes += [
        node("Conv", ["qs", "w2", "b2"], ["r"]),
        node("Sigmoid", ["r"], ["gate"]),
        node("Mul", ["ds", "gate"], ["se"]),
        node("Conv", ["se", "wp", "bp"], ["p" if stride == 1 else "y"]),
    ]
    if stride == 1:
        nodes.append(node("Add", ["p", "x"], ["y"]))
    shape = (batch, c_in, out_size, out_size)
    return onnx_model(nodes, {"x": (batch, c_in, size, size)}, {"y": shape}, inits)


def impl_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(("Conv ", "graphkiln MatMul "))]


@pytest.mark.parametrize(
    "c_in,c_mid,size,stride,batch",
    [(16, 96, 20, 1, 1), (24, 144, 15, 2, 1), (20, 36, 9, 1, 2), (40, 240, 7, 1, 1)],
)
def test_mbconv_block(c_in, c_mid, size, stride, batch, capfd, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    model = mbconv_model(c_in, c_mid, size, stride, batch)
    check_cpu(model, {"x": rand((batch, c_in, size, size), 11)}, rtol=RTOL, atol=ATOL)
    tails = [line for line in impl_lines(capfd.readouterr().err) if "+swish after" in line]
    assert len(tails) == 3, tails  # expand, depthwise, squeeze


def test_swish_before_a_residual_add_stays_in_onednn(capfd, monkeypatch):
    """swish(conv(x)) + x: swish is not the chain's last op, so oneDNN runs it."""
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    inits = {"w": rand((12, 12, 3, 3), 1), "b": rand((12,), 2)}
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1] * 4)]
    nodes += swish("c", "s", "c")
    nodes += [node("Add", ["s", "x"], ["y"])]
    model = onnx_model(nodes, {"x": (1, 12, 9, 9)}, {"y": (1, 12, 9, 9)}, inits)
    check_cpu(model, {"x": rand((1, 12, 9, 9), 3)}, rtol=RTOL, atol=ATOL)
    assert not any("+swish after" in line for line in impl_lines(capfd.readouterr().err))


def test_residual_add_then_swish():
    """conv(x) + x, then swish: the binary post-op stays in oneDNN, swish comes after."""
    inits = {"w": rand((8, 8, 3, 3), 1), "b": rand((8,), 2)}
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1] * 4), node("Add", ["c", "x"], ["a"])]
    nodes += swish("a", "y", "a")
    model = onnx_model(nodes, {"x": (2, 8, 11, 11)}, {"y": (2, 8, 11, 11)}, inits)
    check_cpu(model, {"x": rand((2, 8, 11, 11), 3)}, rtol=RTOL, atol=ATOL)


def test_concat_of_swish_convolutions():
    """Two conv + swish branches concatenated on channels, batch 2: the swish loop follows
    each output's layout as the plan gives it (channels-last here, then copied into the
    concat)."""
    inits = {"w1": rand((5, 6, 3, 3), 1), "w2": rand((7, 6, 1, 1), 2), "b2": rand((7,), 3)}
    nodes = [
        node("Conv", ["x", "w1"], ["c1"], pads=[1] * 4),
        node("Conv", ["x", "w2", "b2"], ["c2"]),
    ]
    nodes += swish("c1", "s1", "c1") + swish("c2", "s2", "c2")
    nodes += [node("Concat", ["s1", "s2"], ["y"], axis=1)]
    model = onnx_model(nodes, {"x": (2, 6, 10, 10)}, {"y": (2, 12, 10, 10)}, inits)
    check_cpu(model, {"x": rand((2, 6, 10, 10), 4)}, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("alpha", [1.0, 1.702])
@pytest.mark.parametrize("shape,k,n", [((3, 17, 40), 40, 33), ((64, 256), 256, 512)])
def test_matmul_swish(shape, k, n, alpha, capfd, monkeypatch):
    """MatMul + bias + Swish (opset 24: x * sigmoid(alpha * x))."""
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    inits = {"w": rand((k, n), 1, low=-0.2, high=0.2), "b": rand((n,), 2)}
    nodes = [
        node("MatMul", ["x", "w"], ["m"]),
        node("Add", ["m", "b"], ["a"]),
        node("Swish", ["a"], ["y"], alpha=alpha),
    ]
    out = (*shape[:-1], n)
    model = onnx_model(nodes, {"x": shape}, {"y": out}, inits, opset=24)
    check_cpu(model, {"x": rand(shape, 3, low=-4, high=4)}, rtol=RTOL, atol=ATOL)
    assert any("+swish after" in line for line in impl_lines(capfd.readouterr().err))


def test_conv_swish_op_with_alpha(capfd, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    inits = {"w": rand((10, 6, 3, 3), 1), "b": rand((10,), 2)}
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1] * 4),
        node("Swish", ["c"], ["y"], alpha=1.702),
    ]
    model = onnx_model(nodes, {"x": (1, 6, 13, 13)}, {"y": (1, 10, 13, 13)}, inits, opset=24)
    check_cpu(model, {"x": rand((1, 6, 13, 13), 3)}, rtol=RTOL, atol=ATOL)
    assert any("+swish after" in line for line in impl_lines(capfd.readouterr().err))


def test_large_output_two_threads_and_concurrent_runs(monkeypatch):
    """An output large enough for the parallel loop, at 2 threads, from 4 Python threads at
    once: every run equals ref on its own input."""
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "2")
    model = mbconv_model(32, 192, 40, 1)
    ref = gk.parse_onnx_buffer(model).compile("ref")
    program = gk.parse_onnx_buffer(model).compile("cpu")
    feeds = [{"x": rand((1, 32, 40, 40), 20 + i)} for i in range(4)]
    want = [ref.run(f)[0] for f in feeds]
    errors = []

    def work(i):
        try:
            for _ in range(3):
                got = program.run(feeds[i])[0]
                scale = float(np.abs(want[i]).max())
                np.testing.assert_allclose(got, want[i], rtol=RTOL, atol=ATOL * scale)
        except AssertionError as e:  # reported below, from the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


@pytest.mark.parametrize("scale", [1.0, 60.0])
def test_swish_epilogue_wide_range(scale):
    """The closing swish the cpu kernels apply after the convolution (cpu/swish_tail.cpp, its
    AVX-512 loop with a masked tail): 13 channels x 5 x 7 pixels (not a multiple of 16), values
    to +-hundreds (exp's clamp, results of ~1e-40 and of x itself)."""
    inits = {"w": rand((13, 3, 3, 3), 1) * scale, "b": rand((13,), 2) * scale}
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("Sigmoid", ["c"], ["s"]),
        node("Mul", ["c", "s"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": (1, 3, 5, 7)}, {"y": (1, 13, 5, 7)}, inits)
    check_cpu(model, {"x": rand((1, 3, 5, 7))}, rtol=RTOL, atol=ATOL)
