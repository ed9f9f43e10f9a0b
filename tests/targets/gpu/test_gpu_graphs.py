# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Graph replay on the gpu target: from the second run on, a plan is replayed as one
HIP/CUDA graph. Every replay must read the run's own inputs (host or device) and give ref's
results; `graphs=False` launches kernel by kernel; a bad option value is refused by name."""

import numpy as np
import pytest

import graphkiln as gk
from gpu_testing import requires_gpu
from op_cases import CASES

# convolutions and GEMMs (vendor BLAS inside the capture), pointwise, pooling, attention
MODELS = ["conv_bn_relu_pool", "mlp_block", "attention_causal", "layernorm"]


def _fresh_feeds(feeds: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for name, value in feeds.items():
        if value.dtype.kind == "f":
            out[name] = rng.standard_normal(value.shape).astype(value.dtype)
        else:
            out[name] = value
    return out


@requires_gpu
@pytest.mark.parametrize("name", MODELS)
def test_replays_give_refs_results_for_new_inputs(name):
    model, feeds = CASES[name]()
    ref = gk.parse_onnx_buffer(model).compile("ref")
    program = gk.parse_onnx_buffer(model).compile("gpu")
    states = []
    for seed in range(4):  # run 1 kernel by kernel, run 2 captures, runs 3-4 replay
        run_feeds = _fresh_feeds(feeds, seed)
        got = program.run(run_feeds)
        want = ref.run(run_feeds)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * (np.abs(w).max() + 1))
        states.append(program._executable.plan_summary()["graph"])
    assert states[0] == "not captured yet"
    assert states[-1] == "replaying", states


@requires_gpu
def test_replay_reads_device_inputs():
    torch = pytest.importorskip("torch")
    model, feeds = CASES["mlp_block"]()
    ref = gk.parse_onnx_buffer(model).compile("ref")
    program = gk.parse_onnx_buffer(model).compile("gpu")
    executable = program._executable
    names = program.get_parameter_names()
    for seed in range(4):
        run_feeds = _fresh_feeds(feeds, 10 + seed)
        device = [torch.from_numpy(np.ascontiguousarray(run_feeds[n])).cuda() for n in names]
        got = executable.run(device)
        np.testing.assert_allclose(got[0], ref.run(run_feeds)[0], rtol=1e-3, atol=1e-4)
    assert executable.plan_summary()["graph"] == "replaying"


@requires_gpu
def test_graphs_off_runs_kernel_by_kernel():
    model, feeds = CASES["conv_bn_relu_pool"]()
    program = gk.parse_onnx_buffer(model).compile("gpu", graphs=False)
    want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    for _ in range(3):
        np.testing.assert_allclose(program.run(feeds)[0], want[0], rtol=1e-3, atol=1e-4)
    assert program._executable.plan_summary()["graph"] == "off"


@requires_gpu
def test_graphs_option_must_be_a_bool():
    model, _ = CASES["mlp_block"]()
    with pytest.raises(ValueError, match="graphs='yes'.*True and False"):
        gk.parse_onnx_buffer(model).compile("gpu", graphs="yes")
