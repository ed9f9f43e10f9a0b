# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln.quantize_int8 on a small CNN and an MLP: the QDQ model it writes (a Q/DQ pair
before every Conv / MatMul / Gemm activation, int8 weights with per-channel scales), its
outputs against the float model's on ref, its options and its errors."""

import numpy as np
import onnx
import pytest
from int8_models import CNN_INPUT, MLP_INPUT, cnn, mlp, samples
from onnx import TensorProto, numpy_helper

import graphkiln as gk

MODELS = {"cnn": (cnn, CNN_INPUT), "mlp": (mlp, MLP_INPUT)}
# the output-channel axis of each op's weight in the models (Gemm has transB=1: B is [N, K])
WEIGHT_AXIS = {"Conv": 0, "Gemm": 0, "MatMul": 1}


def _quantized(name, **options):
    make, shape = MODELS[name]
    model = make()
    return model, onnx.load_from_string(gk.quantize_int8(model, samples(shape), **options))


def _producers(graph):
    return {out: node for node in graph.node for out in node.output}


@pytest.mark.parametrize("name", MODELS)
def test_every_activation_and_weight_is_quantized(name):
    _, model = _quantized(name)
    onnx.checker.check_model(model, full_check=True)
    graph = model.graph
    made, inits = _producers(graph), {t.name: t for t in graph.initializer}
    ops = [n for n in graph.node if n.op_type in WEIGHT_AXIS]
    assert len(ops) == {"cnn": 3, "mlp": 2}[name]
    for node in ops:
        dq = made[node.input[0]]
        assert dq.op_type == "DequantizeLinear" and made[dq.input[0]].op_type == "QuantizeLinear"
        assert inits[dq.input[2]].data_type == TensorProto.UINT8  # asymmetric u8 by default
        w_dq = made[node.input[1]]
        assert w_dq.op_type == "DequantizeLinear"
        w = inits[w_dq.input[0]]
        scale = numpy_helper.to_array(inits[w_dq.input[1]])
        axis = WEIGHT_AXIS[node.op_type]
        assert w.data_type == TensorProto.INT8
        assert onnx.helper.get_attribute_value(w_dq.attribute[0]) == axis
        assert scale.shape == (w.dims[axis],) and (scale > 0).all()
        assert len(np.unique(scale)) > 1  # one scale per channel, not one repeated
        assert not numpy_helper.to_array(inits[w_dq.input[2]]).any()
    float_weights = [t.name for t in graph.initializer if t.name in ("w1", "w2", "wg")]
    assert float_weights == []  # replaced by their int8 form
    assert model.opset_import[0].version == 17


@pytest.mark.parametrize("name", MODELS)
def test_outputs_stay_close_to_the_float_model(name):
    """On inputs not among the calibration samples, the QDQ model on ref stays within 3% of
    the float model's output range (8-bit steps: about 0.5% here)."""
    float_model, quantized = _quantized(name)
    want_prog = gk.parse_onnx(float_model).compile("ref")
    got_prog = gk.parse_onnx(quantized).compile("ref")
    for seed in range(3):
        x = np.random.default_rng(100 + seed).standard_normal(MODELS[name][1])
        feeds = {"x": x.astype(np.float32)}
        want, got = want_prog.run(feeds)[0], got_prog.run(feeds)[0]
        assert np.abs(got - want).max() < 0.03 * np.ptp(want)
        assert not np.array_equal(got, want)  # quantization did change something


def test_per_tensor_and_symmetric_options():
    _, model = _quantized("cnn", per_channel=False, symmetric_activations=True)
    onnx.checker.check_model(model)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear":
            assert inits[node.input[1]].shape == ()  # one scale per tensor
            # int8 zero points of 0; int32 for the biases
            data = inits.get(node.input[0])
            zero_type = np.int32 if data is not None and data.dtype == np.int32 else np.int8
            assert inits[node.input[2]].dtype == zero_type and not inits[node.input[2]].any()
    # a symmetric zero point is not int8's lowest value: the Relu cannot fold into the Conv,
    # so the Conv's own output is quantized (the Relu reads it dequantized)
    made = _producers(model.graph)
    (relu,) = [n for n in model.graph.node if n.op_type == "Relu"]
    assert made[relu.input[0]].op_type == "DequantizeLinear"


def test_the_callers_model_is_not_changed_and_progress_is_reported():
    model = mlp()
    before = model.SerializeToString()
    calls = []
    gk.quantize_int8(model, samples(MLP_INPUT, count=8), progress=lambda d, t: calls.append(d))
    assert model.SerializeToString() == before
    assert calls == list(range(1, 9))


def test_an_opset_11_model_is_raised_to_13():
    model = mlp(opset=11)
    quantized = onnx.load_from_string(gk.quantize_int8(model, samples(MLP_INPUT)))
    onnx.checker.check_model(quantized)
    assert quantized.opset_import[0].version == 13
    x = {"x": np.random.default_rng(9).standard_normal(MLP_INPUT).astype(np.float32)}
    want = gk.parse_onnx(model).compile("ref").run(x)[0]
    got = gk.parse_onnx(quantized).compile("ref").run(x)[0]
    assert np.abs(got - want).max() < 0.03 * np.ptp(want)


@pytest.mark.parametrize(
    ("calibration", "error", "words"),
    [
        ([], ValueError, "calibration list is empty"),
        ({"x": np.ones(MLP_INPUT, np.float32)}, TypeError, "non-empty list of feed dicts"),
        ([{"image": np.ones(MLP_INPUT, np.float32)}], ValueError, "missing 'x'; unknown 'image'"),
        ([{"x": np.ones(MLP_INPUT, np.float64)}], ValueError, "'x' is float64, the model's"),
        ([{"x": np.full(MLP_INPUT, np.nan, np.float32)}], ValueError, "NaN or infinity"),
    ],
)
def test_bad_calibration_names_the_problem(calibration, error, words):
    with pytest.raises(error, match=words):
        gk.quantize_int8(mlp(), calibration)


def test_a_model_without_conv_matmul_or_gemm_is_refused(add_relu_model):
    feeds = [{"x": np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)}]
    with pytest.raises(ValueError, match="nothing to quantize.*Conv, MatMul, Gemm.*Add, Relu"):
        gk.quantize_int8(add_relu_model, feeds)


@pytest.mark.parametrize("activation", ["Relu", "Clip"])
def test_biases_are_int32_and_conv_outputs_are_quantized(activation):
    """The form the cpu target folds into integer convolutions (passes/fold_quantized.py):
    each bias int32 at scale x_scale * w_scale with zero points 0, each Conv's output (after
    its Relu / Clip, quantized from 0 with zero point 0) through a Q/DQ pair that every
    reader reads."""
    float_model = cnn(activation=activation)
    model = onnx.load_from_string(gk.quantize_int8(float_model, samples(CNN_INPUT)))
    onnx.checker.check_model(model, full_check=True)
    made = _producers(model.graph)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    floats = {t.name: numpy_helper.to_array(t) for t in float_model.graph.initializer}
    for node in (n for n in model.graph.node if n.op_type in ("Conv", "Gemm")):
        b_dq, x_dq, w_dq = (made[node.input[i]] for i in (2, 0, 1))
        assert b_dq.op_type == "DequantizeLinear"
        b, scale, zero = (inits[name] for name in b_dq.input)
        assert b.dtype == np.int32 and zero.dtype == np.int32 and not zero.any()
        want = inits[x_dq.input[1]] * inits[w_dq.input[1]]
        np.testing.assert_allclose(scale, want, rtol=1e-6)
        original = floats[{"conv1": "b1", "conv2": "b2", "gemm": "bg"}[node.name]]
        assert np.abs(b * scale - original).max() <= 0.5 * scale.max()  # rounded to a step
    readers = {name: [n for n in model.graph.node if name in n.input] for name in made}
    for conv in (n for n in model.graph.node if n.op_type == "Conv"):
        (after,) = readers[conv.output[0]]
        if after.op_type == activation:
            (after,) = readers[after.output[0]]
            assert not inits[after.input[2]].any()  # u8 from 0: the activation folds
        assert after.op_type == "QuantizeLinear"
        (dq,) = readers[after.output[0]]
        assert dq.op_type == "DequantizeLinear"
    assert not {"b1", "b2", "bg"} & set(inits)  # replaced by their int32 form
