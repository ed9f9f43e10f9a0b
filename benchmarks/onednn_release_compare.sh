#!/usr/bin/env bash
# oneDNN 3.2 (onednn-cpu-gomp 2023.2.0, what graphkiln builds with: GNU OpenMP) against
# oneDNN 3.13 (onednn 2026.1.0 on PyPI: SYCL CPU runtime, TBB threading) on the same
# convolution and matmul problems (benchmarks/onednn_probe_{conv,matmul}.cpp), at 1 and 2
# threads (taskset; OMP_NUM_THREADS for the OpenMP build, TBB takes the affinity mask).
#
#   benchmarks/onednn_release_compare.sh OLD_PREFIX NEW_PREFIX NEW_RUNTIME_LIBS OPENCL_ICD
#     OLD_PREFIX: include/ and lib/ of oneDNN 3.2 (this repo's .venv: onednn-cpu-gomp)
#     NEW_PREFIX: a folder with include/ (onednn-devel 2026.1.0) and lib/ (onednn 2026.1.0)
#     NEW_RUNTIME_LIBS: ':'-joined lib folders of its runtime wheels (dpcpp-cpp-rt,
#       intel-opencl-rt, intel-sycl-rt, tbb, ... unpacked: `pip download` + unzip)
#     OPENCL_ICD: their libintelocl.so (OCL_ICD_FILENAMES: the SYCL CPU device)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
old=$1 new=$2 runtime=$3 icd=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for probe in conv matmul; do
  g++ -O2 -std=c++17 -I"$old/include" "$here/onednn_probe_$probe.cpp" -L"$old/lib" -ldnnl \
    -Wl,-rpath,"$old/lib" -o "$work/old_$probe"
  g++ -O2 -std=c++17 -I"$new/include" "$here/onednn_probe_$probe.cpp" -L"$new/lib" -ldnnl \
    -Wl,-rpath-link,"$runtime" -o "$work/new_$probe" 2>/dev/null
done
old_run() { OMP_NUM_THREADS=$1 taskset -c "$2" "${@:3}"; }
new_run() { LD_LIBRARY_PATH="$new/lib:$runtime" OCL_ICD_FILENAMES="$icd" taskset -c "$2" "${@:3}"; }
for threads in 1 2; do
  cpus=$([ "$threads" = 1 ] && echo 0 || echo 0-1)
  echo "## $threads thread(s)"
  for shape in "128 512 2048" "128 768 3072" "1 768 3072" "64 1024 1024"; do
    read -r -a args <<<"$shape"
    echo "matmul M K N = $shape (packed weights)"
    echo "  3.2 : $(old_run "$threads" "$cpus" "$work/old_matmul" "${args[@]}" | grep packed)"
    echo "  3.13: $(new_run "$threads" "$cpus" "$work/new_matmul" "${args[@]}" | grep packed)"
  done
  for conv in "3 2 0 64 3 224" "3 1 1 64 64 56" "1 1 0 256 64 56" "3 1 1 256 256 14" \
    "1 1 0 1024 256 14"; do
    read -r -a args <<<"$conv"
    echo "conv k stride pad oc ic size = $conv (channels-last)"
    echo "  3.2 : $(old_run "$threads" "$cpus" "$work/old_conv" "${args[@]}" | grep '^nhwc->nhwc')"
    echo "  3.13: $(new_run "$threads" "$cpus" "$work/new_conv" "${args[@]}" | grep '^nhwc->nhwc')"
  done
done
