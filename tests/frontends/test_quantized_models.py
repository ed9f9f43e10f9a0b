# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Models onnxruntime's own quantizer wrote (quantize_static on a small CNN, recorded by
tools/record_quantized_models.py with onnxruntime's outputs): QDQ with u8 and with i8
activations, and QOperator. On cpu their convolutions run on oneDNN's int8 kernels (the QDQ
ones recognized by passes/fold_quantized.py) and the results match onnxruntime's and the
ref target's. On a CPU without VNNI / AMX (targets/cpu/int8_isa.py) the QDQ models compute
in float32 and the QOperator ones on the portable integer kernels; the values are checked
the same way."""

import os

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.targets.cpu.int8_isa import onednn_int8_exact

DATA = os.path.join(os.path.dirname(__file__), "data")
VARIANTS = ["qdq_u8", "qdq_s8", "qop"]
CONVS = 8  # in tools/record_quantized_models.py's float_cnn
ONEDNN_INT8 = onednn_int8_exact()
INT8_CONVS = CONVS if ONEDNN_INT8 else 0  # those the cpu runs on oneDNN's int8 kernel


def _path(name):
    return os.path.join(DATA, f"small_cnn_{name}.onnx")


def _run(program, x):
    (logits,) = program.run({"input": x})
    return np.asarray(logits)


def _steps(program):
    plans = program._executable._plans.values()
    return [step for segments in plans for s in segments for step in s.plan.steps]


def _int8_convs(program):
    """The steps running oneDNN's int8 convolution."""
    return [s for s in _steps(program) if s.kernel == "Conv" and "q_wei_scales" in s.attrs]


def _unit(logits):
    """The spacing of the quantized logits (their last QuantizeLinear's scale)."""
    steps = np.diff(np.unique(logits))
    return float(steps.min())


@pytest.mark.parametrize("name", VARIANTS)
def test_matches_onnxruntime(name):
    recorded = np.load(os.path.join(DATA, f"small_cnn_{name}.npz"))
    program = gk.parse_onnx(_path(name)).compile("cpu")
    assert len(_int8_convs(program)) == INT8_CONVS
    got = _run(program, recorded["input"])
    want = recorded["output"]
    assert len(np.unique(want)) == want.size  # ten distinct logits, not a saturated head
    np.testing.assert_allclose(got, want, rtol=0, atol=1.01 * _unit(want))


@pytest.mark.parametrize("name", VARIANTS)
def test_int8_against_ref_and_float(name):
    """On other seeded inputs: int8 kernels within one unit of the logits' scale of ref
    (the QDQ graph computed in float, as written) and of the cpu's own float path."""
    ref = gk.parse_onnx(_path(name)).compile("ref")
    int8 = gk.parse_onnx(_path(name)).compile("cpu")
    as_float = gk.parse_onnx(_path(name)).compile("cpu", int8=False)
    # QOperator models are integer ops as written; int8=False keeps QDQ graphs in float
    assert len(_int8_convs(as_float)) == (INT8_CONVS if name == "qop" else 0)
    for seed in range(3):
        x = np.random.default_rng(100 + seed).standard_normal((1, 3, 32, 32)).astype(np.float32)
        want = _run(ref, x)
        unit = _unit(want)
        np.testing.assert_allclose(_run(int8, x), want, rtol=0, atol=1.01 * unit)
        if name != "qop":  # the float path is ref's arithmetic
            np.testing.assert_allclose(_run(as_float, x), want, rtol=0, atol=1.01 * unit)


def test_verify_passes_accepts_the_int8_rewrite():
    """compile(verify_passes=True) checks fold_quantized's graph, not its rounding, and
    holds the passes after it to its results."""
    program = gk.parse_onnx(_path("qdq_u8")).compile("cpu", verify_passes=True, int8=True)
    # without VNNI / AMX the folded QLinearConv nodes run on the portable integer kernel
    assert len(_int8_convs(program)) == INT8_CONVS
    x = np.random.default_rng(7).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = _run(gk.parse_onnx(_path("qdq_u8")).compile("ref"), x)
    np.testing.assert_allclose(_run(program, x), want, rtol=0, atol=1.01 * _unit(want))


@pytest.mark.parametrize("name", ["dynamic", "qdq", "qop"])
def test_quantized_transformer_matches_onnxruntime(name):
    """tests/models/dynamic/bert_tiny.onnx through quantize_dynamic and quantize_static
    (QDQ, and QOperator: QLinearMatMul, QLinearAdd, QLinearSoftmax, ...): every weight
    product runs as an int8 oneDNN matmul on cpu (dims symbolic: the plan is made for the
    feeds' shapes), and the outputs match onnxruntime's."""
    path = os.path.join(DATA, f"bert_tiny_{name}.onnx")
    recorded = np.load(os.path.join(DATA, f"bert_tiny_{name}.npz"))
    feeds = {k[len("input:") :]: v for k, v in recorded.items() if k.startswith("input:")}
    want = [v for k, v in recorded.items() if k.startswith("output:")]
    program = gk.parse_onnx(path, default_dim=None).compile("cpu")
    got = program.run(feeds)
    integer = [
        s
        for s in _steps(program)
        if s.kernel == "MatMul" and ("q_src_zp" in s.attrs or "q_src_zp_arg" in s.attrs)
    ]
    # the projections of two layers and the pooler (the portable kernel without VNNI / AMX)
    assert len(integer) >= 6 if ONEDNN_INT8 else not integer
    for g, w in zip(got, want):
        scale = float(np.max(np.abs(w)))
        np.testing.assert_allclose(
            np.asarray(g), w, rtol=0, atol=(1e-4 if name == "dynamic" else 0.02) * scale
        )


@pytest.mark.parametrize(
    "name", ["small_cnn_qdq_u8", "bert_tiny_dynamic", "bert_tiny_qdq", "bert_tiny_qop"]
)
def test_saved_int8_program_loads_and_matches(name):
    """A compiled int8 program (int8 convolutions and matmuls, byte tables) saved and loaded
    gives the same outputs as the program it was saved from."""
    path = os.path.join(DATA, f"{name}.onnx")
    recorded = np.load(os.path.join(DATA, f"{name}.npz"))
    if "input" in recorded.files:
        feeds = {"input": recorded["input"]}
    else:
        feeds = {k[len("input:") :]: recorded[k] for k in recorded.files if k.startswith("input:")}
    program = gk.parse_onnx(path, default_dim=None).compile("cpu")
    want = program.run(feeds)
    loaded = gk.load_buffer(gk.save_buffer(program))
    for got, expected in zip(loaded.run(feeds), want):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("name", ["lstm_forward_directions", "lstm_bidirectional_rows"])
def test_dynamic_quantize_lstm_imports_and_matches_onnxruntime(name):
    """quantize_dynamic's DynamicQuantizeLSTM (int8 W / R transposed, scales per direction or
    per gate row) imports as an LSTM on dequantized weights: cpu equals ref, and both stay
    within onnxruntime's own quantization error of its output (it also quantizes x and h)."""
    path = os.path.join(DATA, f"{name}.onnx")
    recorded = np.load(os.path.join(DATA, f"{name}.npz"))
    feeds = {"x": recorded["input:x"]}
    want = [recorded[f"output:{k}"] for k in ("y", "y_h", "y_c")]
    cpu = gk.parse_onnx(path).compile("cpu").run(feeds)
    ref = gk.parse_onnx(path).compile("ref").run(feeds)
    for c, r, w in zip(cpu, ref, want):
        np.testing.assert_allclose(np.asarray(c), np.asarray(r), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(c), w, rtol=0, atol=0.03)


@pytest.mark.parametrize("target", ["ref", "cpu"])
def test_llama_style_decoder_int4_matches_onnxruntime(target):
    """A Llama-style decoder (tools/export_llama_nbits.py: RMSNorm, rotary attention with
    grouped heads, SwiGLU) whose 15 MatMul weights onnxruntime's MatMulNBitsQuantizer turned
    into MatMulNBits (int4, block 32, packed zero points): the logits match onnxruntime's."""
    path = os.path.join(DATA, "llama_tiny_int4.onnx")
    recorded = np.load(os.path.join(DATA, "llama_tiny_int4.npz"))
    program = gk.parse_onnx(path).compile(target)
    (logits,) = program.run({"input_ids": recorded["input:input_ids"]})
    want = recorded["output:logits"]
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(np.asarray(logits), want, rtol=0, atol=1e-4 * scale)
    if target == "cpu":
        assert sum(s.kernel == "MatMulNBits" for s in _steps(program)) == 15  # weights packed
