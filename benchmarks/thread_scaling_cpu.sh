#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# Where 2 threads help and where they do not: per-kernel-type time of each model at 1 and 2
# threads (graphkiln perf --profile, 200 runs; the load monitor's one-thread twin off), from
# the repository root with graphkiln installed in .venv and the models of
# tools/export_real_models.py in MODELS (default /work/models):
#   bash benchmarks/thread_scaling_cpu.sh [model ...]
set -euo pipefail
dir=${MODELS:-/work/models}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(mobilenet_v3_large squeezenet1_1 mnasnet1_0 shufflenet_v2_x1_0 resnet18)
for m in "${models[@]}"; do
  for t in 1 2; do
    echo "### $m, $t thread(s)"
    GRAPHKILN_ADAPT_THREADS=0 GRAPHKILN_NUM_THREADS=$t .venv/bin/python -m graphkiln perf "$dir/$m.onnx" --runs 200 --profile 2>&1 | sed -n '/latency ms/p;/time per kernel type/,/slowest/p' | grep -v slowest
  done
done
