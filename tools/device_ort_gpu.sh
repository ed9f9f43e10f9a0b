#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# onnxruntime-gpu as a peer on the lent GPU machine, whose calls carry at most 64 MiB: the
# 255 MB wheel travels in five parts, one per call while the machine stays warm (its /tmp
# persists between calls), and is put together there.
#
# Here (once):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --platform manylinux_2_28_x86_64 onnxruntime-gpu==1.31.1 -d /tmp/ortgpu
#   mkdir .ortgpu1 ... .ortgpu5; split -b 50M -d -a 1 <wheel> part; one part per folder
#   (each folder in .git/info/exclude)
# There, one call per part, carrying .ortgpuN:   bash tools/device_ort_gpu.sh stash .ortgpuN
# Then:   source <(bash tools/device_ort_gpu.sh install)   (or tools/gpu_device_run.sh --ort)
# `install` puts the wheel together, installs it into /tmp/ortgpu and prints the exports that
# make it importable with the CUDA 13 libraries of the machine's PyTorch (cuDNN, cuBLAS, ...).
set -euo pipefail
parts=/tmp/ortparts
case "${1:-}" in
  stash)
    mkdir -p "$parts"
    cp "${2:?usage: device_ort_gpu.sh stash FOLDER}"/part* "$parts/"
    ls -l "$parts" >&2
    ;;
  install)
    if ! [ -d /tmp/ortgpu/onnxruntime ]; then
      count=$(find "$parts" -name 'part*' | wc -l)
      [ "$count" -eq 5 ] || { echo "device_ort_gpu: $count of 5 parts in $parts" >&2; exit 1; }
      wheel=/tmp/onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl
      cat "$parts"/part0 "$parts"/part1 "$parts"/part2 "$parts"/part3 "$parts"/part4 > "$wheel"
      python3 -m pip install -q --no-deps --target /tmp/ortgpu "$wheel" >&2
    fi
    site=$(python3 -c "import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))")
    libs=$(find "$site/nvidia" -maxdepth 3 -type d -name lib | paste -sd: -)
    echo "export PYTHONPATH=/tmp/ortgpu\${PYTHONPATH:+:\$PYTHONPATH}"
    echo "export LD_LIBRARY_PATH=$libs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
    ;;
  *)
    echo "usage: tools/device_ort_gpu.sh stash FOLDER | install" >&2
    exit 2
    ;;
esac
