# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The project's dynamic-shape exports (tests/models/dynamic/, see
tests/models/test_dynamic_models.py) through the gpu target's plans per input shape, run by
the numpy model of the gpu kernels (plan_emulator.py), so that CI without a GPU checks that
every node of their specializations has a gpu kernel; matched with onnxruntime's recorded
outputs. On a device: test_dynamic_models.py's gpu tests."""

import os

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget
from gpu_testing import EmulatedPlan

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "models", "dynamic")
MODELS = ["swin", "segment", "cnn", "encoder", "einsum_attn", "instnorm_feat"]
MODELS += ["gru_tagger", "unet", "mobilenet_block", "vit_tiny", "rnn_denoiser"]
MODELS += ["tcn_classifier", "gpt_kv"]
MODELS += ["resnet_tiny", "densenet_tiny", "convnext_tiny_block", "bert_tiny", "gpt2_tiny"]
MODELS += ["conformer_block", "pointnet", "yolo_head", "efficientnet_block", "seq2seq_gru"]
# an If compiled in line (gpu control steps), LSTMs as host steps (targets/gpu/host_steps.py)
MODELS += ["crnn", "if_gate", "vad_stream", "espcn_sr"]
# models the gpu cannot run yet, with the op it has no kernel for: lowering refuses them (as
# GPU_MISSING in tests/models/test_dynamic_models.py; none now); the streaming models'
# (vad_stream, gpt_kv) recorded calls are run one by one
MISSING: dict[str, str] = {}
MISSING_PARAMS = [
    pytest.param(
        name,
        marks=pytest.mark.xfail(
            strict=True, raises=gk.LoweringError, reason=f"the gpu target has no {op} kernel yet"
        ),
    )
    for name, op in MISSING.items()
]


@pytest.mark.parametrize("name", MODELS + MISSING_PARAMS)
def test_dynamic_model_on_emulated_gpu_matches_onnxruntime(name):
    program = gk.parse_onnx(os.path.join(HERE, name + ".onnx"), default_dim=None)
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    executable = GpuExecutable(graph, plan_factory=EmulatedPlan)
    data = np.load(os.path.join(HERE, name + ".npz"))
    shapes = sorted({k.split(":")[1] for k in data.files if k.startswith("input:")})
    assert len(shapes) >= 2
    for j in shapes:
        feeds = {k.split(":", 2)[2]: data[k] for k in data.files if k.startswith(f"input:{j}:")}
        expected = [data[k] for k in data.files if k.startswith(f"output:{j}:")]
        got = executable.run([feeds[v.name] for v in graph.inputs])
        for g, e in zip(got, expected):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()))
