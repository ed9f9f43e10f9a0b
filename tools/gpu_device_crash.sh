#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# Why does the GPU flavour of graphkiln._core built on the lent GPU machine crash at its
# first call (while a CPU-only build made there, and a GPU build made elsewhere, work)?
# Builds it there without optimization and with debug info, prints the toolchain, pybind11
# and the libraries the module resolves, then runs the first call under gdb (or cuda-gdb)
# and prints the backtrace. Run after tools/gpu_device_run.sh installed the oneDNN wheels
# into /tmp/gk (it reuses that prefix). Logs go to $OUT/crash.log.
set -uo pipefail
OUT="${OUT:-/tmp/gk-out}"
mkdir -p "$OUT"
exec > >(tee "$OUT/crash.log") 2>&1
PREFIX=/tmp/gk DIR=/tmp/gk-dbg
echo "g++: $(g++ -dumpfullversion); nvcc: $(nvcc --version 2>/dev/null | tail -2 | head -1)"
python3 -c "import pybind11, sys; print('pybind11', pybind11.__version__, 'python', sys.version.split()[0])"
export CUDACXX="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
start=$(date +%s)
env -u CXXFLAGS -u CFLAGS -u CUDAFLAGS -u LDFLAGS -u CPPFLAGS \
cmake -S . -B "$DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -Dpybind11_DIR="$(python3 -c 'import pybind11; print(pybind11.get_cmake_dir())')" \
  -DPython_EXECUTABLE="$(command -v python3)" -DDNNL_DIR="$PREFIX/lib/cmake/dnnl" \
  -DGPU_TARGETS=sm_90 -DCMAKE_CXX_COMPILER=/usr/bin/g++ -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF \
  > "$DIR.configure.log" 2>&1 || { tail -20 "$DIR.configure.log"; exit 1; }
cmake --build "$DIR" -j "$(nproc)" > "$DIR.build.log" 2>&1 || { grep -E "error|FAILED" "$DIR.build.log" | head; exit 1; }
echo "debug build: $(( $(date +%s) - start )) s"
grep -E "CMAKE_CUDA_HOST_COMPILER|CMAKE_CUDA_COMPILER:|CMAKE_CXX_COMPILER:|CUDA_RUNTIME_LIBRARY" "$DIR/CMakeCache.txt"
so=$(ls "$DIR"/_core*.so)
ldd "$so" | grep -vE "linux-vdso|ld-linux" | head -20
PROBE="from graphkiln._native import load_core; print('imports:', load_core().build_info())"
GRAPHKILN_CORE_DIR="$DIR" PYTHONPATH="$PWD/python" python3 -X faulthandler -c "$PROBE" && exit 0
GDB=$(command -v gdb || command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)
[ -n "$GDB" ] || { echo "no gdb here"; exit 1; }
echo "=== backtrace ($GDB)"
GRAPHKILN_CORE_DIR="$DIR" PYTHONPATH="$PWD/python" timeout 120 "$GDB" -q -batch \
  -ex run -ex "bt 30" -ex "info sharedlibrary" --args python3 -c "$PROBE" 2>&1 \
  | grep -vE "^\[(New|Thread)|^warning: " | tail -80
