# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The QDQ models quantize_int8 writes, run elsewhere: graphkiln's ref against onnxruntime
on the same file (onnxruntime: a test dependency, never graphkiln's), and the cpu
target's int8 path (compile("cpu", int8=True): Conv / MatMul / Gemm on integer kernels)
against ref."""

import numpy as np
import onnx
import pytest
from int8_models import CNN_INPUT, MLP_INPUT, cnn, mlp, samples
from onnx import numpy_helper

import graphkiln as gk
from graphkiln.targets.cpu.int8_isa import onednn_int8_exact
from graphkiln.targets.registry import default_target

MODELS = {"cnn": (cnn, CNN_INPUT), "mlp": (mlp, MLP_INPUT)}


def _quantized(name) -> bytes:
    make, shape = MODELS[name]
    return gk.quantize_int8(make(), samples(shape))


def _inputs(name, seed):
    x = np.random.default_rng(seed).standard_normal(MODELS[name][1]).astype(np.float32)
    return {"x": x}


def _last_input_unit(data: bytes) -> float:
    """How far the output moves when every element of the last op's quantized input moves
    by one quantization step: its scale times the largest sum of |w| over an output channel.
    Kernels that round an intermediate differently (an integer sum scaled once, against the
    float sum of dequantized values) may move a value across a rounding boundary, by one
    step; the repo's int8 tests allow one unit of the quantized output (test_quantized_models
    .py): our outputs are float, so that unit is taken through the last layer."""
    model = onnx.load_from_string(data)
    made = {out: node for node in model.graph.node for out in node.output}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = made[model.graph.output[0].name]
    x_scale = float(inits[made[last.input[0]].input[1]])
    w_dq = made[last.input[1]]
    axis = onnx.helper.get_attribute_value(w_dq.attribute[0])
    w = inits[w_dq.input[0]].astype(np.float64)
    scale = np.expand_dims(inits[w_dq.input[1]], 1 - axis)
    return x_scale * float(np.abs(w * scale).sum(axis=1 - axis).max())


@pytest.mark.parametrize("name", MODELS)
def test_ref_matches_onnxruntime(name):
    import onnxruntime as ort

    data = _quantized(name)
    ref = gk.parse_onnx_buffer(data).compile("ref")
    plain = ort.SessionOptions()
    # without its graph optimizations onnxruntime computes the QDQ graph as written, as ref
    # does (float32 dequantize, float op, quantize rounding half to even): the same values
    # up to float32 summation order, 1e-5 of the output range
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    as_written = ort.InferenceSession(data, plain, providers=["CPUExecutionProvider"])
    # with them it fuses Q/DQ into integer kernels: within one step of the last quantized
    # input, taken through the last layer (_last_input_unit), like graphkiln's cpu below
    fused = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    unit = _last_input_unit(data)
    for seed in range(3):
        feeds = _inputs(name, 200 + seed)
        want = ref.run(feeds)[0]
        tight = 1e-5 * np.ptp(want)
        np.testing.assert_allclose(as_written.run(None, feeds)[0], want, rtol=0, atol=tight)
        np.testing.assert_allclose(fused.run(None, feeds)[0], want, rtol=0, atol=1.01 * unit)


@pytest.mark.parametrize("name", MODELS)
def test_cpu_int8_matches_ref(name):
    if default_target() != "cpu":
        pytest.skip("the cpu target's C++ core is not built here")
    data = _quantized(name)
    ref = gk.parse_onnx_buffer(data).compile("ref")
    cpu = gk.parse_onnx_buffer(data).compile("cpu", int8=True)
    unit = _last_input_unit(data)
    for seed in range(3):
        feeds = _inputs(name, 300 + seed)
        want = ref.run(feeds)[0]
        np.testing.assert_allclose(cpu.run(feeds)[0], want, rtol=0, atol=1.01 * unit)
    if onednn_int8_exact():  # else MatMulInteger runs on the portable integer kernel
        steps = _steps(cpu)
        # fold_quantized turned the quantized MatMul / Gemm into oneDNN int8 matmuls
        assert any(s.kernel == "MatMul" and "q_src_zp" in s.attrs for s in steps)


def _steps(program):
    plans = program._executable._plans.values()
    return [step for segments in plans for s in segments for step in s.plan.steps]


@pytest.mark.parametrize("activation", ["Relu", "Clip"])
def test_cpu_int8_runs_every_conv_on_integer_kernels(activation):
    """The int32 biases and the quantized Conv outputs (after the Relu / ReLU6 Clip) let
    fold_quantized make every Conv a QLinearConv, which the cpu runs on oneDNN's int8
    convolution (q_src_zp: the source's zero point), the activation folded into it."""
    if default_target() != "cpu":
        pytest.skip("the cpu target's C++ core is not built here")
    if not onednn_int8_exact():
        pytest.skip("oneDNN's int8 kernels need VNNI / AMX here (targets/cpu/int8_isa.py)")
    data = gk.quantize_int8(cnn(activation=activation), samples(CNN_INPUT))
    cpu = gk.parse_onnx_buffer(data).compile("cpu", int8=True)
    convs = [s for s in _steps(cpu) if s.kernel in ("Conv", "QLinearConv")]
    assert len(convs) == 2 and all("q_src_zp" in s.attrs for s in convs)
    assert not [s for s in _steps(cpu) if s.kernel == "MatMul" and "q_src_zp" not in s.attrs]
    ref = gk.parse_onnx_buffer(data).compile("ref")
    floats = gk.parse_onnx(cnn(activation=activation)).compile("ref")
    unit = _last_input_unit(data)
    for seed in range(3):
        feeds = _inputs("cnn", 400 + seed)
        want, got = ref.run(feeds)[0], cpu.run(feeds)[0]
        # one step of the last quantized input, as test_cpu_int8_matches_ref: the integer
        # Conv's one-unit differences in its quantized output (few, 97% or more of the
        # values equal: test_cpu_qlinear_conv_int8.py) are averaged by the pool over 144
        # positions before the Gemm's input is requantized, which moves at most one step
        np.testing.assert_allclose(got, want, rtol=0, atol=1.01 * unit)
        # and the float model's answer within 3% of its range (test_quantize_int8.py)
        reference = floats.run(feeds)[0]
        assert np.abs(got - reference).max() < 0.03 * np.ptp(reference)
