// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
//
// Proves the GPU toolchain works end to end: one kernel, compiled for every ISA of
// GPU_TARGETS, and a host function that asks the runtime for its versions and runs it.
#include "gpu/common.hpp"
#include "gpu/probe.hpp"

namespace graphkiln {
namespace {

constexpr int kProbeThreads = 64;

__global__ void probe_kernel(int* out) { out[threadIdx.x] = 3 * static_cast<int>(threadIdx.x) + 1; }

bool failed(hipError_t status, GpuProbeInfo& info, const char* what) {
  if (status == hipSuccess) return false;
  if (info.error.empty()) info.error = std::string(what) + ": " + hipGetErrorString(status);
  return true;
}

void run_probe_kernel(GpuProbeInfo& info) {
  int* device_out = nullptr;
  if (failed(hipMalloc(reinterpret_cast<void**>(&device_out), kProbeThreads * sizeof(int)), info,
             "hipMalloc")) {
    return;
  }
  probe_kernel<<<1, kProbeThreads>>>(device_out);
  int host_out[kProbeThreads] = {};
  if (!failed(hipGetLastError(), info, "probe_kernel launch") &&
      !failed(hipDeviceSynchronize(), info, "probe_kernel") &&
      !failed(hipMemcpy(host_out, device_out, sizeof(host_out), hipMemcpyDeviceToHost), info,
              "hipMemcpy")) {
    info.kernel_ran = true;
    for (int i = 0; i < kProbeThreads; ++i) info.kernel_ran &= host_out[i] == 3 * i + 1;
  }
  failed(hipFree(device_out), info, "hipFree");
}

}  // namespace

std::string gk_gpu_toolkit_version() {
  return std::string(GRAPHKILN_GPU_TOOLKIT) + " " + std::to_string(GRAPHKILN_GPU_TOOLKIT_MAJOR) +
         "." + std::to_string(GRAPHKILN_GPU_TOOLKIT_MINOR) +
         (GRAPHKILN_GPU_TOOLKIT_PATCH ? "." + std::to_string(GRAPHKILN_GPU_TOOLKIT_PATCH) : "");
}

GpuProbeInfo gk_gpu_probe_info() {
  GpuProbeInfo info;
  failed(hipRuntimeGetVersion(&info.runtime_version), info, "hipRuntimeGetVersion");
  failed(hipDriverGetVersion(&info.driver_version), info, "hipDriverGetVersion");
  if (failed(hipGetDeviceCount(&info.device_count), info, "hipGetDeviceCount")) {
    info.device_count = 0;
  }
  if (info.device_count > 0) run_probe_kernel(info);
  return info;
}

}  // namespace graphkiln
