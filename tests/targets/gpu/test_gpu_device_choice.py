# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Choosing the GPU: compile("gpu", device=N), get_target("gpu", device=N) and
GRAPHKILN_GPU_DEVICE. The option is checked without a GPU; on the device, device=0 runs (the
plan reports it) and a device the machine lacks is a ValueError naming the GPUs there are,
from compile and from the C++ executor alike."""

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.targets.gpu.target import gpu_device
from gpu_testing import requires_gpu
from op_cases import CASES


@pytest.mark.parametrize("bad", [-1, True, 1.5, "0"])
def test_bad_device_option_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match=r"device=.*accepted values are GPU numbers"):
        gpu_device({"device": bad})


def test_device_option_and_variable(monkeypatch):
    monkeypatch.delenv("GRAPHKILN_GPU_DEVICE", raising=False)
    assert gpu_device({}) == -1  # the current device
    assert gpu_device({"device": 2}) == 2
    monkeypatch.setenv("GRAPHKILN_GPU_DEVICE", "3")
    assert gpu_device({}) == 3
    assert gpu_device({"device": 1}) == 1  # the option wins
    monkeypatch.setenv("GRAPHKILN_GPU_DEVICE", "first")
    with pytest.raises(ValueError, match="GRAPHKILN_GPU_DEVICE='first'"):
        gpu_device({})


def test_get_target_keeps_checked_defaults():
    target = gk.get_target("gpu", device=1)
    assert target.defaults == {"device": 1}
    with pytest.raises(ValueError, match="has no option colour"):
        gk.get_target("gpu", colour=1)
    with pytest.raises(ValueError, match="options go with a target name"):
        gk.get_target(target, device=0)


def test_defaults_reach_compile_and_compile_options_win():
    model, feeds = CASES["mlp_block"]()
    ref = gk.get_target("ref")
    ref.options = {"probe": "a test option"}  # an instance attribute: this target only
    ref.defaults = {"probe": 1}
    seen = {}
    compile_ref = ref.compile

    def recording(graph, options):
        seen.update(options)
        return compile_ref(graph, {})

    ref.compile = recording
    gk.parse_onnx_buffer(model).compile(ref, probe=2)
    assert seen == {"probe": 2}
    gk.parse_onnx_buffer(model).compile(ref)
    assert seen == {"probe": 1}


def _ref(model, feeds):
    return gk.parse_onnx_buffer(model).compile("ref").run(feeds)


@requires_gpu
def test_device_zero_runs_and_is_reported():
    model, feeds = CASES["mlp_block"]()
    for program in (
        gk.parse_onnx_buffer(model).compile("gpu", device=0),
        gk.parse_onnx_buffer(model).compile(gk.get_target("gpu", device=0)),
    ):
        for g, w in zip(program.run(feeds), _ref(model, feeds)):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * (np.abs(w).max() + 1))
        assert program._executable.plan_summary()["device_id"] == 0


@requires_gpu
def test_a_device_the_machine_lacks_is_a_clear_error(monkeypatch):
    from graphkiln._native import load_core

    count = int(load_core().gpu_probe_info()["device_count"])
    missing = count  # the first number past the last GPU
    model, _ = CASES["mlp_block"]()
    with pytest.raises(ValueError, match=rf"GPU {missing} does not exist; this machine has"):
        gk.parse_onnx_buffer(model).compile("gpu", device=missing)
    monkeypatch.setenv("GRAPHKILN_GPU_DEVICE", str(missing + 6))
    with pytest.raises(ValueError, match=rf"GPU {missing + 6} does not exist"):
        gk.parse_onnx_buffer(model).compile("gpu")
    # the executor checks too (programs built another way, a saved plan)
    core = load_core()
    with pytest.raises(ValueError, match=rf"GPU device {missing} does not exist"):
        core.GpuExecutor([], [], 0, [], [], False, True, 1, missing)
