#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# What the wheel images run inside (docker/wheel.Dockerfile, cuda.wheel.Dockerfile; start
# them with docker/build-wheels.sh): one wheel per Python for one GPU flavor, repaired and
# checked by tools/build_wheels.py, into dist/.
#   docker/wheel-entry.sh GPU_ARCH [PYTHON...]
# GPU_ARCH: gfx942 | sm_90 | all (fat) | cpu, or a comma-separated list of those (one wheel
# each, built one after the other: compiler caches, where there are, serve the later ones).
# PYTHON: interpreters (default: a manylinux
# image's CPython 3.10-3.13, else the local ROCm base's /opt/py3*, else python3).
# On the local ROCm base (docker/make-rocm-root.sh) the host code is built against its
# /opt/sysroot (cmake/toolchains/sysroot.cmake) with the build requirements it carries
# (no network, no build isolation).
set -euo pipefail
cd "$(dirname "$0")/.."

arch=${1:?usage: docker/build-wheels.sh GPU_ARCH [PYTHON...]}
shift
pythons=("$@")
if [ "${#pythons[@]}" -eq 0 ]; then
  for version in cp310-cp310 cp311-cp311 cp312-cp312 cp313-cp313; do
    if [ -x "/opt/python/$version/bin/python" ]; then
      pythons+=("/opt/python/$version/bin/python")
    fi
  done
fi
if [ "${#pythons[@]}" -eq 0 ]; then
  for python in /opt/py3*/bin/python; do
    if [ -x "$python" ]; then
      pythons+=("$python")
    fi
  done
fi
if [ "${#pythons[@]}" -eq 0 ]; then
  pythons=(python3)
fi
isolation=(--build-isolation)
if [ -d /opt/sysroot ]; then
  export CMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE:-$PWD/cmake/toolchains/sysroot.cmake}
  isolation=()
fi

if command -v ccache >/dev/null; then  # the host objects are the same in each wheel
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR=$PWD CCACHE_DIR=${CCACHE_DIR:-/tmp/graphkiln-ccache} CCACHE_NOHASHDIR=1
fi
IFS=, read -r -a archs <<< "$arch"

# ROCm wheels: graphkiln's MIOpen declarations (src/gpu/miopen.hpp, loaded with dlopen)
# checked against MIOpen's own header at compile time, where the image has that header
# (/opt/rocm/include on ROCm's images; the local base keeps libmiopen-dev's in /opt/miopen-dev).
if [[ ",$arch," != *,sm_* && ",$arch," != ",cpu," ]]; then
  for include in /opt/rocm/include /opt/miopen-dev/usr/include; do
    if [ -f "$include/miopen/miopen.h" ]; then
      hipcc -x hip --cuda-host-only -fsyntax-only -std=c++17 -Isrc -I"$include" \
        tests/cpp/miopen_abi_check.hip
      echo "== MIOpen declarations match $include/miopen/miopen.h"
      break
    fi
  done
fi
for one in "${archs[@]}"; do
  target_args=()
  if [ "$one" != "cpu" ]; then
    target_args=(--gpu-targets "$one")
  fi
  for python in "${pythons[@]}"; do
    t0=$SECONDS
    echo "== graphkiln wheel: GPU_ARCH=$one, $("$python" --version)"
    "$python" tools/build_wheels.py "${isolation[@]}" --out dist "${target_args[@]}"
    echo "== graphkiln wheel: GPU_ARCH=$one built in $((SECONDS - t0)) s"
  done
done
if command -v ccache >/dev/null; then
  ccache --show-stats | grep -iE 'hits|misses' || true
fi
