# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Models with dynamic dims that the project exports itself (tools/export_dynamic_models.py:
torch.onnx.export of seeded small models, onnxruntime's outputs recorded next to them in
tests/models/dynamic/): a Swin-style block stack (fixed 32x32, dynamic batch: window
partition by Reshape chains from Shape, torch.roll, a relative position bias table, the
shifted-window mask), a segmentation model (dynamic batch / height / width, its bilinear
head resized to the input's Shape), a CNN (dynamic batch / height / width), a
transformer encoder (dynamic batch / sequence, positions from Range), a CRNN text-line
recognizer (conv stack, two bidirectional LSTM layers, per-step CTC logits; dynamic batch /
width), a scripted model with an `If` in its main graph (the input's energy picks one of two
conv sub-networks; dynamic batch, and batches 1 and 2 are recorded taking both branches), a
MaxViT-style block (patch embedding, MBConv with squeeze-excite, block and grid attention
written with Einsum; dynamic batch) and a wav2vec2-style conv feature extractor
(InstanceNormalization from GroupNorm with a group per channel, GELU; dynamic batch /
samples). The second batch: a token tagger (embedding, two bidirectional GRU layers, a
linear per step; dynamic batch / sequence), a small U-Net (two downsampling stages,
ConvTranspose upsampling with skip concatenations; dynamic batch / height / width), a
MobileNetV3-style network (hardswish stem, inverted residuals with depthwise convs and
squeeze-excite by hardsigmoid; dynamic batch / height / width), a tiny ViT (patch
embedding, a class token concatenated, learned positions, nn.TransformerEncoderLayer;
dynamic batch), an audio denoiser (Conv1d front end, a tanh RNN, a ConvTranspose1d decoder;
dynamic batch / samples), a temporal conv net (dilated causal Conv1d by left Pad,
LayerNorm over channels between Transposes, residuals; dynamic batch / time) and an ESPCN
super-resolution net (convs, PixelShuffle as DepthToSpace; dynamic batch / height / width).
The third batch: a ResNet-style net (bottlenecks with BatchNorm, a strided 1x1 conv
shortcut), a DenseNet-style net (dense blocks concatenating BN-ReLU-Conv features, a 1x1 +
average pool transition), ConvNeXt blocks (depthwise 7x7, LayerNorm over channels after a
Transpose, GELU MLP, layer scale) and EfficientNet blocks (fused MBConv, MBConv with SiLU
squeeze-excite), all dynamic batch / height / width; a BERT-style encoder (token type ids,
an attention mask added as (1 - mask) * -10000, a tanh pooler; three int64 inputs) and a
GPT-2-style decoder (causal mask sliced from a tril buffer by the sequence length, tanh
GELU, tied LM head), dynamic batch / sequence; a Conformer block over [N, T, C] (half
feed-forwards, self-attention, a GLU / depthwise Conv1d / BatchNorm conv module; dynamic
batch / time); a PointNet classifier (a T-Net's 3x3 transform by MatMul, a Conv1d MLP, max
over points; dynamic batch / points); a YOLO-style detector (nearest Resize x2 and Concat
neck, two heads decoded on grids built from Range of the feature size into [N, A, 8];
dynamic batch / height / width) and a GRU encoder-decoder (six teacher-forced decoder steps
with dot-product attention over the encoder's outputs; dynamic batch / source length).

Imported with no input_shapes (dims stay symbolic), each is run at every recorded shape on
ref, on cpu natively (no fallback: compile would refuse a node without a kernel) and, where a
GPU is found, on gpu.

Streaming models (STREAMING) have state inputs and outputs: a Silero-style voice activity
detector (fixed shapes: audio chunk [1, 512], 2-layer LSTM state h / c [2, 1, 64] in and
out) and a tiny GPT-style decoder with its key / value cache in and out (one token per
call, the past growing from length 0 by one per call: a new shape, so a new plan, per
call). Their recording is one stream (the state fed to call k+1 is what call k returned);
the test runs the stream the same way, feeding each call the state graphkiln returned for
the previous one, and compares every call with onnxruntime's.

CPU_MISSING: models the cpu target cannot run natively yet, checked on ref and with
fallback="ref": a detection head with NonMaxSuppression (fixed input; three images, each
keeping a different number of boxes) whose kept rows are gathered by native-only nodes."""

import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import graphkiln
from gpu_presence import gpu_missing

HERE = os.path.join(os.path.dirname(__file__), "dynamic")
MODELS = [
    "swin",
    "segment",
    "cnn",
    "encoder",
    "crnn",
    "if_gate",
    "einsum_attn",
    "instnorm_feat",
    "gru_tagger",
    "unet",
    "mobilenet_block",
    "vit_tiny",
    "rnn_denoiser",
    "tcn_classifier",
    "espcn_sr",
    "resnet_tiny",
    "densenet_tiny",
    "convnext_tiny_block",
    "bert_tiny",
    "gpt2_tiny",
    "conformer_block",
    "pointnet",
    "yolo_head",
    "efficientnet_block",
    "seq2seq_gru",
]
# streaming model -> {state input: the output that feeds it on the next call}
STREAMING = {
    "vad_stream": {"h": "h_out", "c": "c_out"},
    "gpt_kv": {"past_key": "present_key", "past_value": "present_value"},
}
# models the gpu target cannot run yet: the op it has no kernel for (compile("gpu") refuses
# the node with a LoweringError; the same list in tests/targets/gpu/
# test_gpu_dynamic_models_emulated.py, which checks it without a GPU); none now
GPU_MISSING: dict[str, str] = {}
# models the cpu target cannot run natively yet (compile("cpu") refuses the nodes named),
# checked on ref, refused natively on cpu (strict), and on cpu with fallback="ref"
CPU_MISSING = {
    "detector_nms": "Gather / Squeeze reading NonMaxSuppression's rows (decided by the run)",
}


def _gpu_params(names) -> list:
    return [
        pytest.param(
            n,
            marks=pytest.mark.xfail(
                strict=True,
                raises=graphkiln.LoweringError,
                reason=f"the gpu target has no {GPU_MISSING[n]} kernel yet",
            ),
        )
        if n in GPU_MISSING
        else n
        for n in names
    ]


def _cases(name: str) -> list[tuple[dict, dict]]:
    """[(feeds, {output name: expected} in graph order)] per recorded case."""
    data = np.load(os.path.join(HERE, name + ".npz"))
    cases = []
    j = 0
    while any(k.startswith(f"input:{j}:") for k in data.files):
        feeds = {k.split(":", 2)[2]: data[k] for k in data.files if k.startswith(f"input:{j}:")}
        expected = {k.split(":", 2)[2]: data[k] for k in data.files if k.startswith(f"output:{j}:")}
        cases.append((feeds, expected))
        j += 1
    return cases


def _program(name: str):
    # default_dim=None: symbolic dims stay symbolic (no input_shapes)
    return graphkiln.parse_onnx(os.path.join(HERE, name + ".onnx"), default_dim=None)


def _compare(got: list, expected: dict) -> None:
    assert len(got) == len(expected)
    for g, (out, e) in zip(got, expected.items()):
        assert g.shape == e.shape and g.dtype == e.dtype, out
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()), err_msg=out)


def _check(program, name: str) -> None:
    cases = _cases(name)
    shapes = [tuple(f[k].shape for k in f) for f, _ in cases]
    if name == "detector_nms":  # a fixed input; the kept boxes' count differs per image
        assert len({len(e["boxes"]) for _, e in cases}) >= 2
    else:  # each case a new shape, except where a model records a shape twice (if_gate)
        assert len(set(shapes)) >= 2 and (len(set(shapes)) == len(cases) or name == "if_gate")
    for feeds, expected in cases:
        _compare(program.run(feeds), expected)


def _check_stream(program, name: str, after_call=None) -> None:
    state = STREAMING[name]
    cases = _cases(name)
    assert len(cases) >= 3
    assert [v.name for v in program.graph.outputs] == list(cases[0][1])
    carried: dict = {}
    for j, (feeds, expected) in enumerate(cases):
        for k, out in state.items():
            if j:  # the recording is one stream
                np.testing.assert_array_equal(feeds[k], cases[j - 1][1][out])
            assert not np.array_equal(expected[out], feeds[k]), (j, out)  # the state moves
        got = program.run({**feeds, **carried})  # from call 1 on: graphkiln's own state
        _compare(got, expected)
        if after_call is not None:  # with the number of input shapes seen so far
            after_call(program, len({tuple(f[k].shape for k in f) for f, _ in cases[: j + 1]}))
        named = dict(zip(expected, got))
        carried = {k: named[out] for k, out in state.items()}


def test_models_have_symbolic_inputs():
    for name in MODELS:
        for t in _program(name).graph.inputs:
            assert any(not isinstance(d, int) for d in t.type.dims), (name, t.name)


def test_if_gate_has_a_data_dependent_if_and_its_cases_take_both_branches():
    graph = onnx.load(os.path.join(HERE, "if_gate.onnx")).graph
    assert [n.op_type for n in graph.node].count("If") == 1
    assert "If" in [n.op for n in _program("if_gate").graph.nodes]  # not folded at import
    # the condition: Greater(ReduceMean(x * x), threshold)
    (greater,) = [n for n in graph.node if n.op_type == "Greater"]
    (const,) = [n for n in graph.node if n.op_type == "Constant" and greater.input[1] in n.output]
    threshold = float(numpy_helper.to_array(const.attribute[0].t))
    branches: dict = {}
    for feeds, _ in _cases("if_gate"):
        energy = float(np.mean(feeds["x"].astype(np.float64) ** 2))
        assert abs(energy - threshold) > 0.2 * threshold  # far from the threshold
        branches.setdefault(feeds["x"].shape, set()).add(energy > threshold)
    assert sum(len(b) == 2 for b in branches.values()) >= 2, branches


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_model_on_ref_matches_onnxruntime(name):
    _check(_program(name).compile("ref"), name)


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_model_runs_natively_on_cpu(name):
    program = _program(name).compile("cpu")  # no fallback
    _check(program, name)
    summary = program.stats()["plan"]
    assert summary["plans"] >= 2 and summary.get("ref_nodes", 0) == 0


@pytest.mark.parametrize("name", STREAMING)
def test_streaming_model_on_ref_matches_onnxruntime(name):
    _check_stream(_program(name).compile("ref"), name)


@pytest.mark.parametrize("name", STREAMING)
def test_streaming_model_runs_natively_on_cpu(name):
    def native(program, shapes):  # a plan per input shape (vad_stream: one; gpt_kv's past
        summary = program.stats()["plan"]  # grows: one per call), none on ref
        assert summary["plans"] == shapes and summary.get("ref_nodes", 0) == 0

    _check_stream(_program(name).compile("cpu"), name, after_call=native)  # no fallback


@pytest.mark.parametrize("name", CPU_MISSING)
def test_cpu_missing_model_on_ref_matches_onnxruntime(name):
    _check(_program(name).compile("ref"), name)


@pytest.mark.parametrize("name", CPU_MISSING)
def test_cpu_missing_model_is_refused_natively_and_runs_with_fallback(name):
    with pytest.raises(graphkiln.LoweringError):
        _program(name).compile("cpu")
    program = _program(name).compile("cpu", fallback="ref")
    _check(program, name)
    assert program.stats()["plan"]["ref_nodes"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", _gpu_params(MODELS))
def test_dynamic_model_runs_natively_on_gpu(name):
    reason = gpu_missing()
    if reason:
        pytest.skip(reason)
    _check(_program(name).compile("gpu"), name)  # no fallback


@pytest.mark.gpu
@pytest.mark.parametrize("name", _gpu_params(STREAMING))
def test_streaming_model_runs_natively_on_gpu(name):
    reason = gpu_missing()
    if reason:
        pytest.skip(reason)
    _check_stream(_program(name).compile("gpu"), name)  # no fallback
