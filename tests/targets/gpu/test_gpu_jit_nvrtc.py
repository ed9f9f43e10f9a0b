# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The generated Pointwise sources compile with the real runtime compilers, with no header
and the options src/gpu/rtc.hip passes: NVRTC for sm_90 (needs libnvrtc: pip install
nvidia-cuda-nvrtc) and hipRTC for gfx90a (ROCm's libamdhip64 / libhiprtc), each skipped with
the reason when the library is not found. No GPU is needed to compile. A set of sources
covering every opcode, dtype and index-map mode of the codegen tests goes in one program."""

from __future__ import annotations

import ctypes
import glob
import os

import pytest

from jit_host import input_modes


def _nvrtc():
    names = ["libnvrtc.so.13", "libnvrtc.so.12"]
    try:
        import nvidia

        for root in nvidia.__path__:
            names += sorted(glob.glob(os.path.join(root, "*", "lib", "libnvrtc.so.1[0-9]")))
    except ImportError:
        pass
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        _preload_builtins(os.path.dirname(name))
        return lib
    return None


def _preload_builtins(folder: str) -> None:
    """As src/gpu/rtc.hip does: libnvrtc-builtins from libnvrtc's own folder (pip's layout
    keeps it there, off the loader's path), so NVRTC finds it when it compiles."""
    for path in sorted(glob.glob(os.path.join(folder, "libnvrtc-builtins.so.*"))) if folder else []:
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            continue


def _hiprtc():
    for name in (
        "libhiprtc.so.6",
        "libhiprtc.so.5",
        "libhiprtc.so",
        "libamdhip64.so.6",
        "libamdhip64.so.5",
    ):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        if hasattr(lib, "hiprtcCreateProgram"):
            return lib
    return None


def _covering_sources(executables) -> list[str]:
    """Few sources that together use every opcode, dtype and map mode seen in the cases."""
    from graphkiln.targets.native.lower_pointwise import OPCODES

    chosen, seen = [], set()
    for _, plan, _, _ in executables.values():
        for step in plan.steps:
            if "jit_source" not in step.attrs:
                continue
            code, maps = step.attrs["program"], step.attrs["jit_maps"]
            features = {("op", OPCODES[code[k]]) for k in range(0, len(code), 5)}
            features |= {("mode", m) for m in input_modes(maps)}
            features |= {("out", maps[1]), ("compute", step.attrs.get("compute"))}
            features |= {("in", maps[at]) for at in _input_dtype_positions(maps)}
            if not features <= seen:
                seen |= features
                chosen.append(step.attrs["jit_source"])
    return chosen


def _input_dtype_positions(maps: list[int]) -> list[int]:
    positions, at = [], 3
    for _ in range(maps[2]):
        positions.append(at)
        at += 3 + 2 * maps[at + 2]
    return positions


def _compile(lib, prefix: str, sources: list[str], options: list[bytes]) -> tuple[int, str]:
    program = ctypes.c_void_p()
    text = "".join(sources).encode()
    assert (
        getattr(lib, prefix + "CreateProgram")(ctypes.byref(program), text, b"gk.cu", 0, None, None)
        == 0
    )
    array = (ctypes.c_char_p * len(options))(*options)
    status = getattr(lib, prefix + "CompileProgram")(program, len(options), array)
    size = ctypes.c_size_t()
    getattr(lib, prefix + "GetProgramLogSize")(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(max(size.value, 1))
    getattr(lib, prefix + "GetProgramLog")(program, log)
    getattr(lib, prefix + "DestroyProgram")(ctypes.byref(program))
    return status, log.value.decode(errors="replace")


@pytest.fixture(scope="module")
def executables():
    from test_gpu_jit_codegen import lower_cases

    return lower_cases()


def test_gpu_jit_sources_compile_with_nvrtc_for_sm90(executables):
    lib = _nvrtc()
    if lib is None:
        pytest.skip("libnvrtc not found (pip install nvidia-cuda-nvrtc)")
    sources = _covering_sources(executables)
    status, log = _compile(lib, "nvrtc", sources, [b"--gpu-architecture=sm_90"])
    assert status == 0, log
    assert "warning" not in log, log


def test_gpu_jit_sources_compile_with_hiprtc_for_gfx90a(executables):
    lib = _hiprtc()
    if lib is None:
        pytest.skip("hipRTC not found (ROCm's libamdhip64 / libhiprtc)")
    sources = _covering_sources(executables)
    status, log = _compile(lib, "hiprtc", sources, [b"--offload-arch=gfx90a", b"-O3"])
    assert status == 0, log
