#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# A before / after cpu comparison on the lent GPU machine's 16 quiet cores (this project's own
# VM has 2 busy ones): builds the cpu core of the working tree and of an older tree (BASE, a
# `git archive` of the commit to compare with), exports the real models with the machine's
# torch (tools/export_real_models.py), and runs benchmarks/cpu_vs_onnxruntime.py (the
# machine's onnxruntime as the peer) for each build, ROUNDS times in turn (base, current,
# base, current, ...), so that each model's ratio gk / ort can be compared between builds
# against its own spread over the rounds. Run from the repository root through the device
# tool, carrying `.whl` (the oneDNN wheels for Python 3.12) and BASE:
#
#   bash tools/cpu_compare_device.sh --base .base [--threads 4] [--rounds 2] [--runs 20]
#
# Tables go to $OUT/cpu_<base|current>_<round>.md (or /tmp/gk-out).
set -uo pipefail

BASE="" THREADS=4 ROUNDS=2 RUNS=20
MODELS="resnet50,resnet50_b8,mobilenet_v3_small,efficientnet_b0,densenet121,convnext_tiny,vit_b_16,bert,gpt2"
while [ $# -gt 0 ]; do
  case "$1" in
    --base) BASE="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    *) echo "unknown argument $1 (accepted: --base DIR --threads N --rounds N --runs N --models A,B)" >&2; exit 2 ;;
  esac
done
[ -d "$BASE" ] || { echo "--base DIR: the older tree to compare with (got '$BASE')" >&2; exit 2; }
OUT="${OUT:-/tmp/gk-out}"
PREFIX=/tmp/gk
mkdir -p "$OUT"
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

step "oneDNN wheels -> $PREFIX"
python3 -m pip install -q --no-index --no-deps --prefix "$PREFIX" .whl/*.whl || exit 1
DNNL_LIB=$(dirname "$(find "$PREFIX" -name 'libdnnl.so.3' | head -1)")
export LD_LIBRARY_PATH="$DNNL_LIB:${LD_LIBRARY_PATH:-}"

build_cpu() {  # source folder, build folder
  local src="$1" dir="$2" start
  start=$(date +%s)
  rm -rf "$dir"
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPU_TARGETS= \
    -Dpybind11_DIR="$(python3 -c 'import pybind11; print(pybind11.get_cmake_dir())')" \
    -DPython_EXECUTABLE="$(command -v python3)" -DDNNL_DIR="$PREFIX/lib/cmake/dnnl" \
    -DCMAKE_CXX_COMPILER=/usr/bin/g++ > "$dir.configure.log" 2>&1 \
    || { tail -20 "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$(nproc)" > "$dir.build.log" 2>&1 \
    || { grep -E "error|FAILED" "$dir.build.log" | head -20; return 1; }
  echo "$src -> $dir: built in $(( $(date +%s) - start )) s"
}
step "cpu builds"
build_cpu . /tmp/gk-cpu-current || exit 1
build_cpu "$BASE" /tmp/gk-cpu-base || exit 1

step "export models with torch: $MODELS"
if [ ! -f /tmp/models/gpt2.npz ]; then
  PYTHONPATH="$PWD/python" GRAPHKILN_CORE_DIR=/tmp/gk-cpu-current \
    python3 tools/export_real_models.py --out /tmp/models --models "$MODELS" > "$OUT/export_cpu.log" 2>&1
fi
grep -E '^\[' "$OUT/export_cpu.log" 2>/dev/null | cut -c1-160
ls /tmp/models

for round in $(seq 1 "$ROUNDS"); do
  for build in base current; do
    src="."; [ "$build" = base ] && src="$BASE"
    step "round $round: $build ($src)"
    GRAPHKILN_CORE_DIR="/tmp/gk-cpu-$build" PYTHONPATH="$PWD/$src/python" \
      python3 benchmarks/cpu_vs_onnxruntime.py --dir /tmp/models --models "$MODELS" \
      --threads "$THREADS" --runs "$RUNS" --record "$OUT/cpu_${build}_${round}.md" 2>&1 | tail -14
  done
done
