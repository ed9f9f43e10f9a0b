#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# Configures, builds and runs the C++ unit tests (tests/cpp/) with AddressSanitizer and
# UBSan. Usage: tools/run_sanitized_tests.sh [BUILD_DIR]   (default build/sanitized)
# Needs cmake, ninja (or make) and a C++17 compiler; pybind11's CMake files come from the
# active Python (pip install pybind11), as the top-level CMakeLists.txt asks for them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/sanitized}
python=${PYTHON:-python3}

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
pybind11_dir=$("$python" -m pybind11 --cmakedir)

cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug \
  -DGRAPHKILN_BUILD_TESTS=ON -DGRAPHKILN_SANITIZE=ON \
  -Dpybind11_DIR="$pybind11_dir" -DPython_EXECUTABLE="$(command -v "$python")" >/dev/null
cmake --build "$build" --target graphkiln_core_tests

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$build/graphkiln_core_tests"
