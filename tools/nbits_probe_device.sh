#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# On the lent GPU machine: build benchmarks/matmul_nbits_probe.cu (the MatMulNBits GEMV kernel
# against the memory it reads and against a read-only kernel of the same bytes), run it, and
# profile single launches of the GEMV kernel with Nsight Compute. Run from the repository root
# through the device tool (nothing to carry; no graphkiln build needed):
#
#   bash tools/nbits_probe_device.sh                 # probe, 200 runs a case, and the profiles
#   bash tools/nbits_probe_device.sh --runs 100 --ncu "0:1 4:1"   # CASE:CONFIG pairs to profile
#   bash tools/nbits_probe_device.sh --ncu ""        # no profiles
#
# CASE and CONFIG index the probe's tables (cases: 0 = 4096 x 4096 int4 block 32 ... ; configs:
# 0 = 4 rows 4 warps, 1 = 8 rows 4 warps, ..., 12 = the v2 kernel at 8 rows 4 warps:
# benchmarks/matmul_nbits_probe.cu). Output goes to
# $OUT (the device tool's folder) or /tmp/gk-out: nbits_probe.md, ncu_nbits_CASE_CONFIG.txt.
set -uo pipefail

RUNS=200 NCU="0:1 0:12 4:1"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --ncu) NCU="$2"; shift 2 ;;
    *) echo "unknown argument $1 (accepted: --runs N, --ncu 'CASE:CONFIG ...')" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-/tmp/gk-out}"
mkdir -p "$OUT"
NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"

echo "=== build the probe ($(date -u +%H:%M:%S))"
"$NVCC" -std=c++17 -O3 -arch=sm_90 -lineinfo -x cu -I src benchmarks/matmul_nbits_probe.cu \
  -o /tmp/nbits_probe || exit 1

echo "=== /tmp/nbits_probe $RUNS ($(date -u +%H:%M:%S))"
/tmp/nbits_probe "$RUNS" | tee "$OUT/nbits_probe.md"

for pair in $NCU; do
  case_index="${pair%%:*}" config_index="${pair##*:}"
  echo "=== Nsight Compute: case $case_index, config $config_index ($(date -u +%H:%M:%S))"
  ncu --clock-control none --kernel-name regex:matmul_nbits --launch-skip 20 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section InstructionStats --section SourceCounters \
    /tmp/nbits_probe 30 "$case_index" "$config_index" > "$OUT/ncu_nbits_${pair/:/_}.txt" 2>&1
  grep -v "^==PROF==" "$OUT/ncu_nbits_${pair/:/_}.txt" | grep -v "^ *$" | head -170
done
