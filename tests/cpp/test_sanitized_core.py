# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The C++ core's unit tests build and pass under AddressSanitizer and UBSan."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "run_sanitized_tests.sh")


def _missing_tool() -> str | None:
    if shutil.which("cmake") is None:
        return "cmake is not installed"
    if not any(shutil.which(c) for c in ("c++", "g++", "clang++")):
        return "no C++ compiler (c++, g++ or clang++)"
    try:
        import pybind11  # noqa: F401
    except ImportError:
        return "pybind11 is not installed (the top-level CMakeLists.txt needs its CMake files)"
    return None


@pytest.mark.skipif(_missing_tool() is not None, reason=str(_missing_tool()))
def test_core_unit_tests_pass_under_asan_and_ubsan(tmp_path):
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(
        ["bash", SCRIPT, str(tmp_path / "build")],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert "all build_info checks passed" in output
    assert "address sanitizer: on" in output, "GRAPHKILN_SANITIZE did not reach the build"
