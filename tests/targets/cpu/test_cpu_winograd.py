# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""3x3 stride-1 convolutions on graphkiln's Winograd F(4x4, 3x3) kernel (src/cpu/
winograd_conv.cpp): against ref over odd image sizes, asymmetric pads, channel counts that
are not multiples of the vector width, batches, no bias, and the fused epilogues (residual
add, relu, clip, per-channel mul), with the kernel forced (GRAPHKILN_CPU_WINOGRAD=always /
avx2) so that small shapes exercise it; both ways of cutting a run over threads (blocks of
tiles; chunk groups over inputs transformed once); chosen by its cost model where it pays
and only there; the same results with it turned off (GRAPHKILN_CPU_WINOGRAD=0), from
concurrent runs and after a save / load round trip (its packed weights saved with the
program)."""

import os
import threading

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand

# F(4x4, 3x3) in float32 sums transformed values some 10x larger than the direct
# convolution's products: errors of a few 1e-7 of the output's range
RTOL, ATOL = 1e-4, 1e-5


def _block(batch, c, k, h, w, pads, bias=True, epilogue="relu", stem=8):
    """x -> 3x3 conv (stem -> c) -> relu -> 3x3 conv (c -> k, `pads`) [-> epilogue] -> 1x1
    conv (k -> 8): convolutions on both sides make the layout analysis keep the tested
    convolution's input and output channels-last, as between the layers of a CNN."""
    oh, ow = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    inits = {"w1": rand((c, stem, 3, 3), 1) * (2 / (9 * stem)) ** 0.5, "b1": rand((c,), 2)}
    inits["w2"] = rand((k, c, 3, 3), 3) * (2 / (9 * c)) ** 0.5
    conv2 = ["r", "w2"]
    if bias:
        inits["b2"] = rand((k,), 4)
        conv2.append("b2")
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1]),
        node("Relu", ["a"], ["r"]),
        node("Conv", conv2, ["e" if epilogue == "none" else "c"], pads=list(pads)),
    ]
    inputs = {"x": (batch, stem, h, w)}
    inits["w3"] = rand((8, k, 1, 1), 6) * k**-0.5
    if epilogue == "relu":
        nodes.append(node("Relu", ["c"], ["e"]))
    elif epilogue == "add_relu":  # a residual block's end: the shortcut is the first relu
        assert (c, oh, ow) == (k, h, w)
        nodes += [node("Add", ["c", "r"], ["s"]), node("Relu", ["s"], ["e"])]
    elif epilogue == "add_input":  # a second input of the output's shape
        inputs["z"] = (batch, k, oh, ow)
        nodes.append(node("Add", ["c", "z"], ["e"]))
    elif epilogue == "clip":
        inits["lo"], inits["hi"] = np.float32(-0.25), np.float32(0.5)
        nodes.append(node("Clip", ["c", "lo", "hi"], ["e"]))
    elif epilogue == "mul_channel":
        inits["g"] = rand((1, k, 1, 1), 5)
        nodes.append(node("Mul", ["c", "g"], ["e"]))
    nodes.append(node("Conv", ["e", "w3"], ["y"]))
    model = onnx_model(nodes, inputs, {"y": (batch, 8, oh, ow)}, inits)
    feeds = {name: rand(shape, 10 + i) for i, (name, shape) in enumerate(inputs.items())}
    return model, feeds


def _has_avx2_fma() -> bool:
    """Whether this CPU has the AVX2 + FMA the kernel needs (Linux: /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


def _winograd_steps(err: str) -> list[str]:
    return [line for line in err.splitlines() if "graphkiln winograd" in line]


CASES = [
    # batch, c, k, h, w, pads, bias, epilogue
    (1, 32, 32, 32, 32, (1, 1, 1, 1), True, "add_relu"),
    (2, 20, 40, 13, 11, (1, 1, 1, 1), True, "relu"),
    (3, 17, 33, 19, 22, (0, 1, 2, 0), False, "none"),
    (4, 64, 64, 8, 8, (1, 1, 1, 1), True, "clip"),
    (2, 48, 24, 18, 10, (1, 1, 1, 1), True, "add_input"),
    (2, 40, 72, 15, 16, (2, 2, 2, 2), False, "mul_channel"),
    (8, 128, 128, 4, 4, (1, 1, 1, 1), True, "add_relu"),
]


@pytest.mark.parametrize("isa", ["best", "avx2"])
@pytest.mark.parametrize("batch,c,k,h,w,pads,bias,epilogue", CASES)
def test_winograd_matches_ref(batch, c, k, h, w, pads, bias, epilogue, isa, capfd, monkeypatch):
    """`isa`: the widest build of the inner loops the CPU has, or the AVX2 one (8-float
    vectors, 16-channel GEMM columns) wherever AVX2 is."""
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    monkeypatch.setenv("GRAPHKILN_CPU_WINOGRAD", "avx2" if isa == "avx2" else "always")
    model, feeds = _block(batch, c, k, h, w, pads, bias, epilogue)
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)
    steps = _winograd_steps(capfd.readouterr().err)
    if not _has_avx2_fma():
        pytest.skip("this CPU has no AVX2 / FMA: every Conv stays on oneDNN")
    assert len(steps) == 1, steps  # the second convolution (the stem has 8 channels)
    if isa == "avx2":
        assert "winograd F(4x4,3x3) avx2" in steps[0]


@pytest.mark.parametrize(
    "c,h,split",
    [
        # 25 tiles, transformed weights (1.3 MB) outweigh the inputs' V (0.4 MB): the threads
        # transform the inputs once, then each takes chunk groups
        (96, 20, "inputs transformed once for all groups"),
        # 100 tiles, small weights: blocks of tiles, each transforming its own inputs
        (32, 40, "4 block(s) x 1 chunk group(s)"),
    ],
)
def test_split_over_two_threads(c, h, split, capfd, monkeypatch):
    """At 2 threads (GRAPHKILN_ADAPT_THREADS=0: no 1-thread twin when the machine is busy),
    both ways of cutting the work give ref's values; the build reports which one it took."""
    if not _has_avx2_fma():
        pytest.skip("this CPU has no AVX2 / FMA: every Conv stays on oneDNN")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: GRAPHKILN_NUM_THREADS cannot be 2")
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "2")
    monkeypatch.setenv("GRAPHKILN_ADAPT_THREADS", "0")
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    monkeypatch.setenv("GRAPHKILN_CPU_WINOGRAD", "always")
    model, feeds = _block(1, c, c, h, h, (1, 1, 1, 1), True, "add_relu")
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)
    steps = _winograd_steps(capfd.readouterr().err)
    assert len(steps) == 1 and "2 thread(s)" in steps[0] and split in steps[0], steps


@pytest.mark.parametrize(
    "batch,c,h",
    [
        (1, 64, 56),  # ResNet's first stage: 196 tiles of 64 channels
        (1, 128, 28),  # its second: 49 tiles of 128
        (4, 256, 14),  # its third at batch 4: 64 tiles of 256
    ],
)
def test_chosen_where_it_pays(batch, c, h, capfd, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    model, feeds = _block(batch, c, c, h, h, (1, 1, 1, 1), True, "relu")
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)
    if not _has_avx2_fma():
        pytest.skip("this CPU has no AVX2 / FMA: every Conv stays on oneDNN")
    assert len(_winograd_steps(capfd.readouterr().err)) == 1


def test_turned_off_gives_the_same_values(capfd, monkeypatch):
    model, feeds = _block(2, 32, 32, 16, 16, (1, 1, 1, 1), True, "add_relu")
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    monkeypatch.setenv("GRAPHKILN_CPU_WINOGRAD", "always")
    on = gk.parse_onnx_buffer(model).compile("cpu").run(feeds)[0]
    assert _has_avx2_fma() is bool(_winograd_steps(capfd.readouterr().err))
    monkeypatch.setenv("GRAPHKILN_CPU_WINOGRAD", "0")
    capfd.readouterr()
    off = check_cpu(model, feeds, rtol=RTOL, atol=ATOL)[0]
    assert not _winograd_steps(capfd.readouterr().err)
    np.testing.assert_allclose(on, off, rtol=RTOL, atol=ATOL * float(np.abs(off).max()))


@pytest.mark.parametrize(
    "batch,c,h",
    [
        (1, 256, 4),  # one tile: 36 points against 16 outputs, padded to a micro-kernel
        (1, 512, 7),  # four tiles of a deep layer: its weights would cost more than it saves
        (1, 8, 32),  # too few channels for the transforms to pay
        (1, 256, 14),  # 16 tiles of 256 channels: reading its weights costs more than it saves
    ],
)
def test_not_chosen_where_it_does_not_pay(batch, c, h, capfd, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_ONEDNN_IMPL", "1")
    model, feeds = _block(batch, c, c, h, h, (1, 1, 1, 1), True, "relu")
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)
    assert not _winograd_steps(capfd.readouterr().err)


def test_concurrent_runs(monkeypatch):
    monkeypatch.setenv("GRAPHKILN_CPU_WINOGRAD", "always")
    model, _ = _block(2, 32, 32, 20, 20, (1, 1, 1, 1), True, "add_relu")
    program = gk.parse_onnx_buffer(model).compile("cpu")
    ref = gk.parse_onnx_buffer(model).compile("ref")
    inputs = [{"x": rand((2, 8, 20, 20), 100 + i)} for i in range(6)]
    expected = [ref.run(f)[0] for f in inputs]
    errors = []

    def worker(i):
        try:
            for _ in range(5):
                got = program.run(inputs[i])[0]
                np.testing.assert_allclose(got, expected[i], rtol=RTOL, atol=ATOL * 10)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_saved_program_keeps_the_packed_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_CPU_WINOGRAD", "always")
    model, feeds = _block(2, 32, 48, 12, 12, (1, 1, 1, 1), True, "relu")
    program = gk.parse_onnx_buffer(model).compile("cpu")
    expected = program.run(feeds)[0]
    path = tmp_path / "block.gkp"
    gk.save(program, path)
    loaded = gk.load(path)
    np.testing.assert_array_equal(loaded.run(feeds)[0], expected)


def test_saved_on_one_isa_loaded_on_another(tmp_path, monkeypatch):
    """Packed weights saved by the AVX2 build (16-channel GEMM columns) are not taken by the
    AVX-512 one (32): the layout differs, so the loaded program transforms the weights again
    and gives the same values."""
    if not _has_avx2_fma():
        pytest.skip("this CPU has no AVX2 / FMA: every Conv stays on oneDNN")
    model, feeds = _block(2, 32, 40, 12, 12, (1, 1, 1, 1), True, "relu")
    monkeypatch.setenv("GRAPHKILN_CPU_WINOGRAD", "avx2")
    program = gk.parse_onnx_buffer(model).compile("cpu")
    expected = program.run(feeds)[0]
    path = tmp_path / "block.gkp"
    gk.save(program, path)
    monkeypatch.setenv("GRAPHKILN_CPU_WINOGRAD", "always")
    loaded = gk.load(path)
    np.testing.assert_allclose(
        loaded.run(feeds)[0], expected, rtol=RTOL, atol=ATOL * float(np.abs(expected).max())
    )
