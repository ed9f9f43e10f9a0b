# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A build without GPU code (the CPU wheel, GPU_TARGETS empty): compile("gpu") says so and
how to get a GPU build, whether or not the machine has a GPU; available_targets(),
`graphkiln doctor` and the CLI do not offer gpu as usable (issue #17). Builds are simulated
by replacing graphkiln._core.build_info, devices by GRAPHKILN_FAKE_GPU_ARCH."""

import pytest

import graphkiln
from graphkiln import device
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.cli.main import main
from graphkiln.targets import registry

try:
    from graphkiln._native import load_core

    _core = load_core()
except ImportError:
    pytest.skip("the C++ core is not built", allow_module_level=True)

CPU_BUILD = {
    "version": "0.1.0",
    "compiler": "gcc",
    "gpu_platform": "none",
    "gpu_targets": [],
    "gpu_toolkit": "",
}
NVIDIA_BUILD = {
    "version": "0.1.0",
    "compiler": "gcc",
    "gpu_platform": "nvidia",
    "gpu_targets": ["sm_90"],
    "gpu_toolkit": "CUDA 13.0",
}


@pytest.fixture
def cpu_build(monkeypatch):
    monkeypatch.setattr(_core, "build_info", lambda: dict(CPU_BUILD))


@pytest.fixture
def nvidia_build(monkeypatch):
    monkeypatch.setattr(_core, "build_info", lambda: dict(NVIDIA_BUILD))


def _says_no_gpu_code_and_how_to_get_it(message: str) -> None:
    assert "has no GPU code" in message and "gpu target cannot run" in message, message
    assert "--index-url <graphkiln index>/" in message, message
    assert "GPU_TARGETS=" in message and "pip install ." in message, message


def test_compile_gpu_without_gpu_code_and_without_a_gpu(monkeypatch, cpu_build):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "none")
    with pytest.raises(device.GpuCompatibilityError) as info:
        graphkiln.parse_onnx(EXAMPLE_MODEL).compile("gpu")
    message = str(info.value)
    _says_no_gpu_code_and_how_to_get_it(message)
    assert "No GPU was found" in message and "no GPU found: the CPU targets run" not in message
    verdict = graphkiln.check_gpu_compatibility()
    assert verdict.status == "cpu-build" and not verdict.ok and verdict.devices == []


def test_compile_gpu_without_gpu_code_on_a_gpu_machine(monkeypatch, cpu_build):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "sm_90")
    with pytest.raises(device.GpuCompatibilityError) as info:
        graphkiln.parse_onnx(EXAMPLE_MODEL).compile("gpu")
    message = str(info.value)
    _says_no_gpu_code_and_how_to_get_it(message)
    assert "/cu<major>/sm_90/" in message and "simulated sm_90" in message


def test_a_gpu_build_without_a_gpu_still_says_no_gpu(monkeypatch, nvidia_build):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "none")
    verdict = graphkiln.check_gpu_compatibility()
    assert verdict.status == "no-gpu" and verdict.message == "no GPU found: the CPU targets run"


def test_available_targets_follow_the_build(cpu_build, monkeypatch):
    assert graphkiln.available_targets() == ["cpu", "ref"]
    assert registry.registered_targets() == ["cpu", "gpu", "ref"]
    assert type(graphkiln.get_target("gpu")).__name__ == "GpuTarget"  # still accepted
    with pytest.raises(ValueError, match=r"available: cpu, ref \(gpu: not in this build\)"):
        graphkiln.get_target("tpu")
    monkeypatch.setattr(_core, "build_info", lambda: dict(NVIDIA_BUILD))
    assert graphkiln.available_targets() == ["cpu", "gpu", "ref"]


def test_doctor_marks_gpu_not_built(monkeypatch, cpu_build, capsys):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "none")
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "targets: cpu, ref (gpu: not in this build)\n" in out
    assert "GPU check: cpu-build" in out and "has no GPU code" in out


def test_doctor_lists_gpu_on_a_gpu_build(monkeypatch, nvidia_build, capsys):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "sm_90")
    assert main(["doctor"]) == 0
    assert "targets: cpu, gpu, ref\n" in capsys.readouterr().out


def test_cli_target_gpu_on_a_cpu_build_gives_the_reason(monkeypatch, cpu_build, capsys):
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "none")
    assert main(["compile", EXAMPLE_MODEL, "--target", "gpu"]) == 1
    _says_no_gpu_code_and_how_to_get_it(capsys.readouterr().err)


def test_a_saved_gpu_program_on_a_cpu_build_names_the_missing_target(monkeypatch, cpu_build):
    import json

    program = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("ref", optimize=True)
    doc = json.loads(graphkiln.save_buffer(program, "json"))
    doc["compiled"].update(target="gpu", options={}, gpu_arch="sm_90")
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "sm_90")
    with pytest.raises(
        graphkiln.FormatError,
        match="target 'gpu', which this build of "
        r"graphkiln lacks \(available: cpu, ref\)",
    ):
        graphkiln.load_buffer(json.dumps(doc).encode())
