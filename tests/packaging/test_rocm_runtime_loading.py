# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A ROCm build loads its HIP runtime at run time (graphkiln/_native.py): with no runtime, or
one its GPU module cannot use, the CPU-only module serves, the reason is kept, and the device
verdict says the ISAs match but the GPU code cannot load."""

import pytest

import graphkiln
from graphkiln import _native

try:
    _core = _native.load_core()  # also from a build folder (GRAPHKILN_CORE_DIR)
except ImportError:
    pytest.skip("the C++ core is not built", allow_module_level=True)

AMD_WHEEL = {
    "version": "0.1.0",
    "compiler": "gcc",
    "gpu_platform": "amd",
    "gpu_targets": ["gfx942"],
    "gpu_toolkit": "HIP 6",
}


@pytest.fixture
def restore_core(monkeypatch):
    """_load_rocm_build replaces sys.modules['graphkiln._core']: put the real one back."""
    import sys

    monkeypatch.setitem(sys.modules, "graphkiln._core", _core)
    monkeypatch.setattr(_native, "_gpu_runtime_problem", None)


def test_no_hip_runtime_loads_the_cpu_only_module(monkeypatch, restore_core):
    def missing():
        raise OSError("no HIP runtime found (libamdhip64.so.7, libamdhip64.so.6, ...)")

    def gpu_module():
        raise AssertionError("the GPU module must not be imported without a runtime")

    monkeypatch.setattr(_native, "_hip_runtime", missing)
    module = _native._load_rocm_build(gpu_module, _core.__file__)
    assert hasattr(module, "build_info") and module.__file__ == _core.__file__
    assert "no HIP runtime found" in _native.gpu_runtime_problem()


def test_a_runtime_the_gpu_module_cannot_use_falls_back_with_the_reason(monkeypatch, restore_core):
    def gpu_module():
        raise ImportError("_core.so: undefined symbol: hipGetDevicePropertiesR0600")

    monkeypatch.setattr(_native, "_hip_runtime", lambda: "/opt/rocm/lib/libamdhip64.so.5")
    module = _native._load_rocm_build(gpu_module, _core.__file__)
    assert module.__file__ == _core.__file__
    problem = _native.gpu_runtime_problem()
    assert "libamdhip64.so.5" in problem and "hipGetDevicePropertiesR0600" in problem


def test_the_gpu_module_is_used_when_the_runtime_serves_it(monkeypatch, restore_core):
    monkeypatch.setattr(_native, "_hip_runtime", lambda: "libamdhip64.so.6")
    sentinel = object()
    assert _native._load_rocm_build(lambda: sentinel, _core.__file__) is sentinel
    assert _native.gpu_runtime_problem() is None


def test_the_runtime_search_names_what_it_tried(monkeypatch):
    monkeypatch.setenv("ROCM_PATH", "/nonexistent/rocm")
    monkeypatch.setattr(_native, "HIP_RUNTIMES", ("libgraphkiln-no-such-runtime.so.9",))
    with pytest.raises(OSError, match="libgraphkiln-no-such-runtime.so.9.*ROCm 6 or 7"):
        _native._hip_runtime()


def test_verdict_matches_but_says_the_runtime_is_missing(monkeypatch):
    monkeypatch.setattr(_core, "build_info", lambda: dict(AMD_WHEEL))
    monkeypatch.setattr(_native, "_gpu_runtime_problem", "no HIP runtime found (...)")
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "gfx942")
    verdict = graphkiln.check_gpu_compatibility()
    assert verdict.status == "no-runtime" and not verdict.ok
    assert [d.arch for d in verdict.usable] == ["gfx942"]
    assert verdict.message.startswith("the wheel matches: every GPU is covered")
    assert "no HIP runtime found" in verdict.message and "cpu, ref" in verdict.message
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "gfx1100")
    mismatch = graphkiln.check_gpu_compatibility()
    assert mismatch.status == "mismatch"
    # the CPU-only module reports its toolkit as a bare major ("HIP 6"): the fixes name it
    assert "/rocm6/gfx1100/" in mismatch.message and "<major>" not in mismatch.message


def test_the_loaded_runtime_is_kept_for_doctor(monkeypatch, restore_core):
    from graphkiln.cli.doctor import _hip_runtime_lines

    monkeypatch.setattr(_native, "_hip_runtime_path", None)
    assert _hip_runtime_lines() == []  # not a ROCm build: nothing to say
    monkeypatch.setattr(_native, "_hip_runtime", lambda: "/opt/rocm-7.0.2/lib/libamdhip64.so.7.0")
    sentinel = object()
    assert _native._load_rocm_build(lambda: sentinel, _core.__file__) is sentinel
    assert _native.hip_runtime_loaded() == "/opt/rocm-7.0.2/lib/libamdhip64.so.7.0"
    assert _hip_runtime_lines() == ["HIP runtime: /opt/rocm-7.0.2/lib/libamdhip64.so.7.0"]


def test_doctor_says_when_no_runtime_was_found(monkeypatch, restore_core):
    from graphkiln.cli.doctor import _hip_runtime_lines

    monkeypatch.setattr(_native, "_hip_runtime_path", None)

    def missing():
        raise OSError("no HIP runtime found (libamdhip64.so.7, ...)")

    monkeypatch.setattr(_native, "_hip_runtime", missing)
    _native._load_rocm_build(lambda: None, _core.__file__)
    (line,) = _hip_runtime_lines()
    assert line.startswith("HIP runtime: none found") and "CPU-only module" in line


def test_a_loaded_library_is_named_by_its_mapped_file():
    import ctypes
    import os

    libc = ctypes.CDLL("libc.so.6")
    assert libc is not None
    mapped = _native._mapped_file("libc.so.6")
    assert mapped is not None and os.path.isfile(mapped) and "libc" in os.path.basename(mapped)
    assert _native._mapped_file("libgraphkiln-not-loaded.so.3") is None
