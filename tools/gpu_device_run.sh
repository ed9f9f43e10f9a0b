#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# Build graphkiln's NVIDIA flavour on the lent GPU machine and run the gpu target there:
# the device probe, the gpu-marked tests (per-op against ref), and the real models exported
# there with torch (tools/gpu_device_models.py), checked against onnxruntime's outputs at
# rtol 1e-3. Run from the repository root, through the device tool, carrying `.whl` (the
# oneDNN wheels for Python 3.12: see the download line in benchmarks/results/gpu_h200.md):
#
#   bash tools/gpu_device_run.sh                       # build from source (cmake, sm_90)
#   bash tools/gpu_device_run.sh --prebuilt .gpucarry  # use a _core*.so built elsewhere
#   bash tools/gpu_device_run.sh --prebuilt /tmp/gk-build  # an earlier call's build on a
#     machine still warm (its oneDNN too: .whl need not be carried again)
#   bash tools/gpu_device_run.sh --fallback .gpucarry  # build; use that one if the build crashes
#   ... --models resnet50,bert   --skip-models   --skip-conformance   --tests "attention or conv"
#   (--tests: a pytest -k expression selecting gpu tests; --skip-tests runs none)
#   --bench "ARGS": also run benchmarks/gpu_vs_torch.py ARGS (after the tests)
#   --tuning "ARGS": also run benchmarks/tuning_gpu.py ARGS (e.g. "--models resnet50:1")
#   --attention "ARGS": also run benchmarks/attention_gpu.py ARGS (before --bench; "" is not
#   empty enough: give e.g. "--runs 20")
#   --concurrency "ARGS": also run benchmarks/concurrency.py --target gpu ARGS, after
#   exporting resnet50 with torch to /tmp/models (give e.g. "--models /tmp/models/resnet50.onnx")
#   --dynamic "ARGS": also run benchmarks/dynamic_shapes.py --target gpu ARGS (symbolic-shape
#   request streams against onnxruntime; e.g. "--requests 200"; "" is not empty enough)
#   --phases "ARGS": also run benchmarks/new_shape_phases.py --target gpu ARGS, with the JIT on
#   and with GRAPHKILN_GPU_JIT=0 (where a new shape's time goes; e.g. "--shapes 8")
#   --nbits "ARGS": also run benchmarks/matmul_nbits_gpu.py ARGS (int4 / int8 MatMulNBits
#   against the memory it reads and torch's fp16 matmul; "" is not empty enough: "--runs 200")
#   --serve "ARGS": also run benchmarks/serve_load.py --target gpu ARGS (the serving load, issue
#   23), installing starlette and uvicorn from the wheels in .servewheels (carry it; made here
#   by `pip download --no-deps --only-binary=:all: -d .servewheels starlette uvicorn`); with
#   --ort the peer is onnxruntime-gpu's CUDA provider behind the same server
#   --ncu-attention: also profile one launch of the tensor-core attention kernel at BERT-base
#   batch 32 fp16 with Nsight Compute (benchmarks/attention_gpu.py under ncu; clocks left alone)
#   --ort-tools DIR: also run tests/frontends/test_onnxruntime_tools.py on gpu (onnxruntime's
#   own tools there: its transformer optimizer, quantizers, MatMulNBitsQuantizer), installing
#   onnxruntime (cpu) and what its tools need from the wheels in DIR (carry it; made here by
#   `pip download --no-deps --only-binary=:all: --python-version 3.12 --platform
#   manylinux_2_28_x86_64 -d DIR onnxruntime==1.24.1 sympy mpmath onnx-ir flatbuffers`)
#   --ort: put onnxruntime-gpu together from the parts earlier calls stashed
#   (tools/device_ort_gpu.sh) and make it importable, for --bench "--ort ..."
# With models, it also saves and loads each compiled gpu program (tools/gpu_device_roundtrip.py).
#
# Logs go to $OUT (the device tool's folder) or /tmp/gk-out.
set -uo pipefail

PREBUILT="" FALLBACK="" CONFORMANCE=1 MODELS="resnet50,mobilenet_v3_small,efficientnet_b0,densenet121,convnext_tiny,vit_b_16,bert,gpt2,all_minilm_l6_v2_arch"
SKIP_MODELS=0 ORT=0 ORT_TOOLS="" NBITS="" SERVE="" NCU_ATTENTION=0 TEST_ARGS="" SKIP_TESTS=0 BENCH="" TUNING="" ATTENTION="" CONCURRENCY="" DYNAMIC="" PHASES="" GPU_TARGETS="${GPU_TARGETS:-sm_90}"
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) PREBUILT="$2"; shift 2 ;;
    --fallback) FALLBACK="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --skip-models) SKIP_MODELS=1; shift ;;
    --skip-conformance) CONFORMANCE=0; shift ;;
    --tests) TEST_ARGS="$2"; shift 2 ;;
    --skip-tests) SKIP_TESTS=1; shift ;;
    --bench) BENCH="$2"; shift 2 ;;
    --tuning) TUNING="$2"; shift 2 ;;
    --attention) ATTENTION="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --dynamic) DYNAMIC="$2"; shift 2 ;;
    --phases) PHASES="$2"; shift 2 ;;
    --ort) ORT=1; shift ;;
    --ort-tools) ORT_TOOLS="$2"; shift 2 ;;
    --nbits) NBITS="$2"; shift 2 ;;
    --serve) SERVE="$2"; shift 2 ;;
    --ncu-attention) NCU_ATTENTION=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-/tmp/gk-out}"
mkdir -p "$OUT"
PREFIX=/tmp/gk
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
python3 --version

step "oneDNN wheels -> $PREFIX"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --prefix "$PREFIX" .whl/*.whl || exit 1
elif [ -z "$(find "$PREFIX" -name 'libdnnl.so.3' 2>/dev/null | head -1)" ]; then
  echo "no .whl carried and no oneDNN in $PREFIX from an earlier call" >&2; exit 1
fi
DNNL_LIB=$(dirname "$(find "$PREFIX" -name 'libdnnl.so.3' | head -1)")
CUBLAS_LIB=$(python3 -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH="$DNNL_LIB:${CUBLAS_LIB:-/usr/local/cuda/lib64}:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
echo "libdnnl: $DNNL_LIB; cuBLAS searched in: ${CUBLAS_LIB:-} /usr/local/cuda/lib64"

if [ -n "$PREBUILT" ]; then
  step "prebuilt core from $PREBUILT"
  case "$PREBUILT" in
    /*) export GRAPHKILN_CORE_DIR="$PREBUILT" ;;  # e.g. /tmp/gk-build of an earlier call
    *) export GRAPHKILN_CORE_DIR="$PWD/$PREBUILT" ;;
  esac
else
  step "build (GPU_TARGETS=$GPU_TARGETS)"
  export CUDACXX="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  echo "g++: $(command -v g++) ($(g++ -dumpfullversion)); nvcc: $CUDACXX; CXXFLAGS='${CXXFLAGS:-}' LDFLAGS='${LDFLAGS:-}'"
  # build_core FOLDER GPU_TARGETS [cmake args...]: configure + build; 0 when the module imports
  build_core() {
    local dir="$1" targets="$2"; shift 2
    local start; start=$(date +%s)
    rm -rf "$dir"  # a warm machine may hold a build of another checkout there
    env -u CXXFLAGS -u CFLAGS -u CUDAFLAGS -u LDFLAGS -u CPPFLAGS \
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -Dpybind11_DIR="$(python3 -c 'import pybind11; print(pybind11.get_cmake_dir())')" \
      -DPython_EXECUTABLE="$(command -v python3)" -DDNNL_DIR="$PREFIX/lib/cmake/dnnl" \
      -DGPU_TARGETS="$targets" -DCMAKE_CXX_COMPILER=/usr/bin/g++ "$@" > "$dir.configure.log" 2>&1 \
      || { tail -20 "$dir.configure.log"; return 1; }
    cmake --build "$dir" -j "$(nproc)" > "$dir.build.log" 2>&1 \
      || { grep -E "error|FAILED" "$dir.build.log" | head -20; return 1; }
    echo "$dir ($targets $*): built in $(( $(date +%s) - start )) s"
    GRAPHKILN_CORE_DIR="$dir" PYTHONPATH="$PWD/python" python3 -c \
      "from graphkiln._native import load_core; print('  imports:', load_core().build_info())"
  }
  if build_core /tmp/gk-build "$GPU_TARGETS"; then
    export GRAPHKILN_CORE_DIR=/tmp/gk-build
  else
    echo "THE CORE BUILT HERE CRASHES OR FAILS; trying variants to find out why"
    build_core /tmp/gk-nolto "$GPU_TARGETS" -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF \
      && export GRAPHKILN_CORE_DIR=/tmp/gk-nolto
    build_core /tmp/gk-cpu "" || echo "  the CPU-only build fails too"
    if [ -z "${GRAPHKILN_CORE_DIR:-}" ] && [ -n "$FALLBACK" ]; then
      echo "falling back to the core prebuilt in $FALLBACK"
      export GRAPHKILN_CORE_DIR="$PWD/$FALLBACK"
    fi
  fi
  tail -n 40 /tmp/gk-*.log > "$OUT/builds.log" 2>/dev/null
fi
export PYTHONPATH="$PWD/python"
if [ "$ORT" = 1 ]; then
  step "onnxruntime-gpu from the stashed parts"
  ort_env=$(bash tools/device_ort_gpu.sh install) || exit 1
  eval "$ort_env"
  python3 -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())"
fi

step "device check and probe"
python3 - <<'PY'
import graphkiln
from graphkiln._native import load_core
from graphkiln.device import check_gpu_compatibility
core = load_core()
print("build_info:", core.build_info())
verdict = check_gpu_compatibility()
print("device check:", verdict.status, "-", verdict.message)
print("probe:", core.gpu_probe_info())
print("gpu kernels:", ", ".join(core.gpu_kernels()))
PY
python3 -c "from graphkiln.cli.main import main; main(['doctor'])"

if [ "$SKIP_TESTS" = 0 ]; then
  step "gpu tests (tests/targets/gpu, tests/models/test_dynamic_models.py)"
  TEST_SELECT=()
  [ -n "$TEST_ARGS" ] && TEST_SELECT=(-k "$TEST_ARGS")
  python3 -m pytest -q -p no:cacheprovider -rs tests/targets/gpu tests/models/test_dynamic_models.py "${TEST_SELECT[@]}" 2>&1 | tee "$OUT/pytest.log" | tail -40
fi

if [ -n "$ORT_TOOLS" ]; then
  step "onnxruntime's tools, their models on gpu (tests/frontends/test_onnxruntime_tools.py)"
  python3 -m pip install -q --no-index --no-deps --target /tmp/ort-tools "$ORT_TOOLS"/*.whl || exit 1
  PYTHONPATH="$PYTHONPATH:/tmp/ort-tools" python3 -m pytest -q -p no:cacheprovider -rs \
    -p no:logging tests/frontends/test_onnxruntime_tools.py -k gpu 2>&1 \
    | tee "$OUT/pytest_ort_tools.log" | tail -15
fi

# ATTENTION, BENCH and TUNING are lists of arguments: split on purpose
if [ -n "$ATTENTION" ]; then
  step "benchmarks/attention_gpu.py $ATTENTION"
  # shellcheck disable=SC2086
  python3 benchmarks/attention_gpu.py $ATTENTION 2>&1 | tee "$OUT/attention_gpu.md" | tail -30
fi

if [ "$NCU_ATTENTION" = 1 ]; then
  step "Nsight Compute: mma_attention at BERT-base batch 32 fp16 (one launch)"
  ncu --clock-control none --kernel-name regex:mma_attention --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section ComputeWorkloadAnalysis \
    python3 benchmarks/attention_gpu.py --batches 32 --precisions fp16 --runs 2 \
    > "$OUT/ncu_attention.txt" 2>&1
  grep -v "^==PROF==" "$OUT/ncu_attention.txt" | tail -150
fi

if [ -n "$CONCURRENCY" ]; then
  step "benchmarks/concurrency.py --target gpu $CONCURRENCY"
  python3 tools/gpu_device_models.py --out /tmp/models --models resnet50 > "$OUT/export_resnet50.log" 2>&1
  # shellcheck disable=SC2086
  python3 benchmarks/concurrency.py --target gpu $CONCURRENCY 2>&1 | tee "$OUT/concurrency_gpu.md" | tail -40
fi

if [ -n "$DYNAMIC" ]; then
  step "benchmarks/dynamic_shapes.py --target gpu $DYNAMIC"
  # shellcheck disable=SC2086
  python3 benchmarks/dynamic_shapes.py --target gpu $DYNAMIC 2>&1 | tee "$OUT/dynamic_shapes_gpu.md" | tail -40
fi

if [ -n "$PHASES" ]; then
  step "benchmarks/new_shape_phases.py --target gpu $PHASES (JIT on, then GRAPHKILN_GPU_JIT=0)"
  # shellcheck disable=SC2086
  { python3 benchmarks/new_shape_phases.py --target gpu $PHASES
    GRAPHKILN_GPU_JIT=0 python3 benchmarks/new_shape_phases.py --target gpu $PHASES; } 2>&1 \
    | tee "$OUT/new_shape_phases_gpu.txt" | tail -60
fi

if [ -n "$NBITS" ]; then
  step "benchmarks/matmul_nbits_gpu.py $NBITS"
  # shellcheck disable=SC2086
  python3 benchmarks/matmul_nbits_gpu.py $NBITS 2>&1 | tee "$OUT/matmul_nbits_gpu.md" | tail -20
fi

if [ -n "$BENCH" ]; then
  step "benchmarks/gpu_vs_torch.py $BENCH"
  # shellcheck disable=SC2086
  python3 benchmarks/gpu_vs_torch.py $BENCH 2>&1 | tee "$OUT/gpu_vs_torch.md" | grep -v "^\s*$" | tail -60
fi

if [ -n "$SERVE" ]; then
  step "benchmarks/serve_load.py --target gpu $SERVE"
  python3 -m pip install -q --no-index --no-deps --target /tmp/servesite .servewheels/*.whl || exit 1
  # shellcheck disable=SC2086
  PYTHONPATH="$PYTHONPATH:/tmp/servesite" python3 benchmarks/serve_load.py --target gpu $SERVE \
    --record "$OUT/serve_load_gpu.md" 2>&1 \
    | tee "$OUT/serve_load_gpu.txt" | tail -20
fi

if [ -n "$TUNING" ]; then
  step "benchmarks/tuning_gpu.py $TUNING"
  # shellcheck disable=SC2086
  python3 benchmarks/tuning_gpu.py $TUNING 2>&1 | tee "$OUT/tuning_gpu.md" | grep -E "^[|]|^gpu|^    row" | tail -80
fi

if [ "$SKIP_MODELS" = 0 ]; then
  step "export models with torch: $MODELS"
  python3 tools/gpu_device_models.py --out /tmp/models --models "$MODELS" > "$OUT/export.log" 2>&1
  grep -E '^\[' "$OUT/export.log" | cut -c1-200
  step "real models on gpu vs onnxruntime (rtol 1e-3)"
  python3 tools/check_real_models.py --dir /tmp/models --models "$MODELS" --target gpu \
    --rtol 1e-3 --repeat 20 --record "$OUT/models.md" -v 2>&1 | tail -40
  cat "$OUT/models.md"
fi
if [ "$SKIP_MODELS" = 0 ]; then
  step "gpu timings (median of 50 runs after 5 warm-ups; numpy in and out)"
  python3 - "$MODELS" <<'PY' | tee "$OUT/timings.md"
import sys, time
import numpy as np
import graphkiln
print("| model | median ms | min ms | plan steps | device MB | BLAS |")
print("| --- | --- | --- | --- | --- | --- |")
for name in sys.argv[1].split(","):
    data = np.load(f"/tmp/models/{name}.npz")
    feeds = {k[6:]: data[k] for k in data.files if k.startswith("input:")}
    program = graphkiln.parse_onnx(f"/tmp/models/{name}.onnx")
    program.compile("gpu")
    for _ in range(5):
        program.run(feeds)
    times = []
    for _ in range(50):
        start = time.perf_counter()
        program.run(feeds)
        times.append((time.perf_counter() - start) * 1e3)
    s = program._executable.plan_summary()
    print(f"| {name} | {np.median(times):.3f} | {min(times):.3f} | {s['steps']} "
          f"| {s['device_bytes'] / 2**20:.0f} | {s['blas']} |", flush=True)
PY
fi

if [ "$SKIP_MODELS" = 0 ]; then
  step "save / load round trips on gpu (bit-identical outputs; load vs compile time)"
  python3 tools/gpu_device_roundtrip.py --dir /tmp/models --models "$MODELS" | tee "$OUT/roundtrip.md"
fi

if [ "$CONFORMANCE" = 1 ]; then
  step "ONNX node conformance cases on gpu"
  python3 tools/conformance.py --target gpu --write-expected 2>&1 | tail -4
  cp tests/conformance/expected_failures_gpu.txt "$OUT/"
fi
step "done"
