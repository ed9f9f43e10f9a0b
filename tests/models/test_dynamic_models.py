# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Models with dynamic dims that the project exports itself (tools/export_dynamic_models.py:
torch.onnx.export of seeded small models, onnxruntime's outputs recorded next to them in
tests/models/dynamic/): a Swin-style block stack (fixed 32x32, dynamic batch: window
partition by Reshape chains from Shape, torch.roll, a relative position bias table, the
shifted-window mask), a segmentation model (dynamic batch / height / width, its bilinear
head resized to the input's Shape), a CNN (dynamic batch / height / width) and a
transformer encoder (dynamic batch / sequence, positions from Range).

Imported with no input_shapes (dims stay symbolic), each is run at every recorded shape on
ref, on cpu natively (no fallback: compile would refuse a node without a kernel) and, where a
GPU is found, on gpu."""

import functools
import os

import numpy as np
import pytest

import graphkiln

HERE = os.path.join(os.path.dirname(__file__), "dynamic")
MODELS = ["swin", "segment", "cnn", "encoder"]


def _cases(name: str) -> list[tuple[dict, list]]:
    """[(feeds, expected outputs in graph order)] per recorded shape."""
    data = np.load(os.path.join(HERE, name + ".npz"))
    cases = []
    j = 0
    while any(k.startswith(f"input:{j}:") for k in data.files):
        feeds = {k.split(":", 2)[2]: data[k] for k in data.files if k.startswith(f"input:{j}:")}
        expected = [data[k] for k in data.files if k.startswith(f"output:{j}:")]
        cases.append((feeds, expected))
        j += 1
    return cases


def _program(name: str):
    # default_dim=None: symbolic dims stay symbolic (no input_shapes)
    return graphkiln.parse_onnx(os.path.join(HERE, name + ".onnx"), default_dim=None)


def _check(program, name: str) -> None:
    cases = _cases(name)
    assert len(cases) >= 2 and len({tuple(f[k].shape for k in f) for f, _ in cases}) == len(cases)
    for feeds, expected in cases:
        got = program.run(feeds)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape and g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()))


def test_models_have_symbolic_inputs():
    for name in MODELS:
        (t,) = _program(name).graph.inputs
        assert any(not isinstance(d, int) for d in t.type.dims), name


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_model_on_ref_matches_onnxruntime(name):
    _check(_program(name).compile("ref"), name)


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_model_runs_natively_on_cpu(name):
    program = _program(name).compile("cpu")  # no fallback
    _check(program, name)
    summary = program.stats()["plan"]
    assert summary["plans"] >= 2 and summary.get("ref_nodes", 0) == 0


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
@pytest.mark.parametrize("name", MODELS)
def test_dynamic_model_runs_natively_on_gpu(name):
    reason = _gpu_missing()
    if reason:
        pytest.skip(reason)
    _check(_program(name).compile("gpu"), name)  # no fallback
