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
samples).

Imported with no input_shapes (dims stay symbolic), each is run at every recorded shape on
ref, on cpu natively (no fallback: compile would refuse a node without a kernel) and, where a
GPU is found, on gpu.

Streaming models (STREAMING) have fixed shapes and state inputs and outputs: a Silero-style
voice activity detector (audio chunk [1, 512], 2-layer LSTM state h / c [2, 1, 64] in and
out). Their recording is one stream (the state fed to call k+1 is what call k returned); the
test runs the stream the same way, feeding each call the state graphkiln returned for the
previous one, and compares every call with onnxruntime's."""

import functools
import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import graphkiln

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
]
# streaming model -> {state input: the output that feeds it on the next call}
STREAMING = {"vad_stream": {"h": "h_out", "c": "c_out"}}
# models the gpu target cannot run yet: the op it has no kernel for (compile("gpu") refuses
# the node with a LoweringError; the same list in tests/targets/gpu/
# test_gpu_dynamic_models_emulated.py, which checks it without a GPU)
GPU_MISSING = {"crnn": "LSTM", "if_gate": "If", "vad_stream": "LSTM"}


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
    # each case a new shape, except where a model records a shape twice on purpose (if_gate)
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
        if after_call is not None:
            after_call(program)
        named = dict(zip(expected, got))
        carried = {k: named[out] for k, out in state.items()}


def test_models_have_symbolic_inputs():
    for name in MODELS:
        (t,) = _program(name).graph.inputs
        assert any(not isinstance(d, int) for d in t.type.dims), name


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
    def native(program):  # every call on one plan (the shapes never change), none on ref
        summary = program.stats()["plan"]
        assert summary["plans"] == 1 and summary.get("ref_nodes", 0) == 0

    _check_stream(_program(name).compile("cpu"), name, after_call=native)  # no fallback


@functools.lru_cache(maxsize=1)
def _gpu_missing() -> str | None:
    from graphkiln.device import check_gpu_compatibility

    verdict = check_gpu_compatibility()
    if not verdict.ok:
        return f"no usable GPU: {verdict.message.splitlines()[0]}"
    from graphkiln._native import load_core

    if not hasattr(load_core(), "GpuExecutor"):
        return "graphkiln._core was built without GPU_TARGETS"
    return None


@pytest.mark.gpu
@pytest.mark.parametrize("name", _gpu_params(MODELS))
def test_dynamic_model_runs_natively_on_gpu(name):
    reason = _gpu_missing()
    if reason:
        pytest.skip(reason)
    _check(_program(name).compile("gpu"), name)  # no fallback


@pytest.mark.gpu
@pytest.mark.parametrize("name", _gpu_params(STREAMING))
def test_streaming_model_runs_natively_on_gpu(name):
    reason = _gpu_missing()
    if reason:
        pytest.skip(reason)
    _check_stream(_program(name).compile("gpu"), name)  # no fallback
