# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln.check_gpu_compatibility and `graphkiln doctor` with simulated devices."""

import subprocess
import sys

import pytest

import graphkiln
from graphkiln import device

_core = pytest.importorskip("graphkiln._core", reason="the C++ core is not built")

AMD_WHEEL = {
    "version": "0.1.0",
    "compiler": "gcc",
    "gpu_platform": "amd",
    "gpu_targets": ["gfx90a", "gfx942"],
    "gpu_toolkit": "HIP 6.4.43482",
}


@pytest.fixture
def amd_build(monkeypatch):
    monkeypatch.setattr(_core, "build_info", lambda: dict(AMD_WHEEL))


def test_no_gpu(monkeypatch, amd_build):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "none")
    verdict = graphkiln.check_gpu_compatibility()
    assert verdict.status == "no-gpu" and not verdict.ok and verdict.devices == []


def test_matching_device(monkeypatch, amd_build):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "gfx942")
    verdict = graphkiln.check_gpu_compatibility()
    assert verdict.ok and [d.arch for d in verdict.usable] == ["gfx942"]
    assert device.require_gpu() is not None


def test_mismatch_names_device_wheel_isas_and_three_fixes(monkeypatch, amd_build):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "gfx1100")
    verdict = graphkiln.check_gpu_compatibility()
    assert verdict.status == "mismatch"
    message = verdict.message
    assert "simulated gfx1100" in message and "(gfx1100," in message
    assert "graphkiln 0.1.0" in message and "gfx90a, gfx942" in message
    assert "/rocm6/gfx1100/\n" in message and "/rocm6/\n" in message
    assert "GPU_TARGETS=native pip install" in message
    with pytest.raises(device.GpuCompatibilityError, match="gfx1100"):
        device.require_gpu()


def test_partial_cover_suggests_hiding_devices(monkeypatch, amd_build):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "gfx90a,sm_90")
    verdict = graphkiln.check_gpu_compatibility()
    assert verdict.status == "mismatch" and [d.arch for d in verdict.usable] == ["gfx90a"]
    assert "HIP_VISIBLE_DEVICES" in verdict.message and "/cu<major>/sm_90/" in verdict.message


def test_cpu_build_on_a_gpu_machine_keeps_the_cpu_targets(monkeypatch):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "sm_90")
    monkeypatch.setattr(
        _core,
        "build_info",
        lambda: {**AMD_WHEEL, "gpu_platform": "none", "gpu_targets": [], "gpu_toolkit": ""},
    )
    verdict = graphkiln.check_gpu_compatibility()
    assert verdict.status == "cpu-build" and "CPU targets keep working" in verdict.message
    assert "ref" in graphkiln.available_targets()


def test_doctor_prints_build_devices_environment_and_verdict():
    env = {"GRAPHKILN_FAKE_GPU_ARCH": "gfx1100", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "graphkiln", "doctor"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    for expected in (
        "distribution: graphkiln",
        "build: ",
        "simulated gfx1100 (gfx1100",
        "GRAPHKILN_FAKE_GPU_ARCH=gfx1100",
        "GPU check: ",
        "Fixes (any one):",
    ):
        assert expected in out, expected
