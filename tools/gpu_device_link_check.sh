#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# Follow-up of tools/gpu_device_crash.sh (whose backtrace ends in libstdc++ code linked INTO
# _core.so: std::ostringstream << int in build_info): on the lent GPU machine, print the
# CUDA language's implicit link libraries / directories CMake found and the module's link
# line, count the libstdc++ definitions inside the module, then try build variants and say
# which ones import. Logs to $OUT/link_check.log.
set -uo pipefail
OUT="${OUT:-/tmp/gk-out}"
mkdir -p "$OUT"
exec > >(tee "$OUT/link_check.log") 2>&1
PREFIX=/tmp/gk
python3 -m pip install -q --no-index --no-deps --prefix "$PREFIX" .whl/*.whl || exit 1
export CUDACXX="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
cmake --version | head -1
ls /usr/lib/gcc/x86_64-linux-gnu/ ; ls /usr/lib/gcc/x86_64-linux-gnu/*/libstdc++* 2>/dev/null
try() {  # try DIR [cmake args]: configure + build (Release, sm_90); report the import
  local dir="$1"; shift
  local start; start=$(date +%s)
  env -u CXXFLAGS -u CFLAGS -u CUDAFLAGS -u LDFLAGS -u CPPFLAGS \
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -Dpybind11_DIR="$(python3 -c 'import pybind11; print(pybind11.get_cmake_dir())')" \
    -DPython_EXECUTABLE="$(command -v python3)" -DDNNL_DIR="$PREFIX/lib/cmake/dnnl" \
    -DGPU_TARGETS=sm_90 -DCMAKE_CXX_COMPILER=/usr/bin/g++ "$@" > "$dir.configure.log" 2>&1 \
    || { tail -20 "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$(nproc)" > "$dir.build.log" 2>&1 || { grep -E "error|FAILED" "$dir.build.log" | head; return 1; }
  echo "== $dir ($*): built in $(( $(date +%s) - start )) s"
  grep -hE "CMAKE_CUDA_IMPLICIT_LINK_(LIBRARIES|DIRECTORIES) " "$dir"/CMakeFiles/*/CMakeCUDACompiler.cmake
  grep -A8 "build _core" "$dir/build.ninja" | grep LINK_LIBRARIES | cut -c1-600
  local so; so=$(ls "$dir"/_core*.so)
  echo "libstdc++ definitions inside: $(nm -C --defined-only "$so" 2>/dev/null | grep -cE 'std::locale::classic|std::codecvt<char16_t')"
  GRAPHKILN_CORE_DIR="$dir" PYTHONPATH="$PWD/python" python3 -c \
    "from graphkiln._native import load_core; print('  IMPORTS:', load_core().build_info())" \
    || echo "  CRASHES"
}
try /tmp/gk-plain
try /tmp/gk-host -DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++
try /tmp/gk-excl "-DCMAKE_CUDA_IMPLICIT_LINK_LIBRARIES_EXCLUDE=stdc++"
