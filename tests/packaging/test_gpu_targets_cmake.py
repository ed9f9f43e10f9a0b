# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""cmake/GpuTargets.cmake: configure errors, and the GPU compile checks (the probe kernel
built for sm_90 by nvcc and for gfx90a;gfx1030 by ROCm), each skipped without its toolchain.

A small CMake project includes GpuTargets.cmake and builds src/core/build_info.cpp with the
GPU sources, so neither pybind11 nor a wheel build is needed."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CMAKE = shutil.which("cmake")
pytestmark = pytest.mark.skipif(CMAKE is None, reason="cmake is not on PATH")

PROJECT = """cmake_minimum_required(VERSION 3.20)
project(gpu_targets_check LANGUAGES CXX)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
include("{root}/cmake/GpuTargets.cmake")
add_library(graphkiln_core STATIC "{root}/src/core/build_info.cpp")
target_include_directories(graphkiln_core PUBLIC "{root}/src")
graphkiln_add_gpu_sources(graphkiln_core)
target_compile_definitions(graphkiln_core PRIVATE GRAPHKILN_VERSION="0"
  GRAPHKILN_GPU_PLATFORM="${{GRAPHKILN_GPU_PLATFORM}}"
  GRAPHKILN_GPU_TARGETS="${{GRAPHKILN_GPU_TARGETS_STRING}}")
"""


def configure(
    tmp_path: Path, gpu_targets: str, *defines: str, **env
) -> subprocess.CompletedProcess:
    (tmp_path / "CMakeLists.txt").write_text(PROJECT.format(root=ROOT.as_posix()))
    argv = [
        CMAKE,
        "-S",
        str(tmp_path),
        "-B",
        str(tmp_path / "build"),
        f"-DGPU_TARGETS={gpu_targets}",
        *defines,
    ]
    if shutil.which("ninja"):
        argv += ["-G", "Ninja"]
    return subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env})


@pytest.mark.parametrize(
    "targets, says",
    [
        ("gfx90a;sm_90", "mixes AMD and NVIDIA ISAs"),
        ("gfx90a;hopper", "'hopper' is not an ISA"),
        ("sm90", "'sm90' is not an ISA"),
    ],
)
def test_bad_lists_are_configure_errors_naming_what_is_accepted(tmp_path, targets, says):
    done = configure(tmp_path, targets)
    assert done.returncode != 0
    text = " ".join(done.stderr.split())
    assert says in text and "Accepted: an empty GPU_TARGETS (CPU only), `native`, `all`" in text


def test_amdgpu_targets_is_an_alias(tmp_path):
    done = configure(tmp_path, "", "-DAMDGPU_TARGETS=gfx90a;gfx1x")
    assert done.returncode != 0 and "'gfx1x' is not an ISA" in " ".join(done.stderr.split())


def test_cpu_only_by_default(tmp_path):
    done = configure(tmp_path, "")
    assert done.returncode == 0, done.stderr
    assert "graphkiln GPU platform: none" in done.stdout


def test_native_without_a_gpu_is_an_error(tmp_path):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    done = configure(tmp_path, "native", PATH=f"{fake_bin}:{Path(CMAKE).parent}:/usr/bin:/bin")
    if "GPU_TARGETS=native found" in done.stdout:
        pytest.skip("this machine has a GPU")
    assert done.returncode != 0 and "no GPU found on this machine" in " ".join(done.stderr.split())


def build(tmp_path, targets, **env):
    done = configure(tmp_path, targets, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    built = subprocess.run(
        [CMAKE, "--build", str(tmp_path / "build")], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return done.stdout


def archive_isas(path: Path) -> set[str]:
    """The GPU ISAs carried by the objects of a static library (every src/gpu kernel file)."""
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    from check_wheel import amd_isas, elf_sections, nvidia_isas

    data, isas, at = path.read_bytes(), set(), 8  # "!<arch>\n", then 60-byte member headers
    while at + 60 <= len(data):
        size = int(data[at + 48 : at + 58].decode().strip())
        sections = elf_sections(data[at + 60 : at + 60 + size])
        if ".hip_fatbin" in sections:
            isas |= amd_isas(sections[".hip_fatbin"])
        if ".nv_fatbin" in sections:
            isas |= nvidia_isas(sections[".nv_fatbin"])
        at += 60 + size + (size & 1)
    return isas


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
def test_nvidia_compile_check(tmp_path):
    out = build(tmp_path, "sm_90")
    assert "graphkiln GPU platform: nvidia; ISAs: sm_90" in out
    assert archive_isas(tmp_path / "build" / "libgraphkiln_gpu.a") == {"sm_90"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
def test_isa_the_toolkit_cannot_compile_is_a_configure_error(tmp_path):
    done = configure(tmp_path, "sm_35")  # dropped from CUDA 12
    assert done.returncode != 0 and "sm_35 cannot be compiled by the nvcc found here" in " ".join(
        done.stderr.split()
    )


def rocm_device_libs() -> bool:
    roots = [os.environ.get("ROCM_PATH", ""), "/opt/rocm", "/usr"]
    return any(
        next(Path(r).glob(p), None) is not None  # a glob's generator is always truthy
        for r in roots
        if r
        for p in (
            "amdgcn/bitcode/oclc_isa_version_90a.bc",
            "lib/*/amdgcn/bitcode/oclc_isa_version_90a.bc",
        )
    )


@pytest.mark.slow
@pytest.mark.skipif(
    not rocm_device_libs(),
    reason="no ROCm with gfx90a device libraries (apt-get "
    "install hipcc libamdhip64-dev rocm-device-libs libamd-comgr-dev)",
)
def test_amd_compile_check(tmp_path):
    out = build(tmp_path, "gfx90a;gfx1030", HIP_PLATFORM="amd")
    assert "graphkiln GPU platform: amd; ISAs: gfx90a;gfx1030" in out
    assert archive_isas(tmp_path / "build" / "libgraphkiln_gpu.a") == {"gfx90a", "gfx1030"}
