// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
//
// The toolchain probe: plain C++ so that host code compiled by the C++ compiler can call it.
#pragma once

#include <string>

namespace graphkiln {

struct GpuProbeInfo {
  int runtime_version = 0;  // hipRuntimeGetVersion / cudaRuntimeGetVersion
  int driver_version = 0;   // hipDriverGetVersion / cudaDriverGetVersion
  int device_count = 0;
  bool kernel_ran = false;  // the probe kernel ran on device 0 and wrote what it should
  std::string error;        // the first runtime error, empty when none
};

// "HIP 5.2.21153" or "CUDA 13.0": the toolkit the GPU code was compiled with. No runtime call.
std::string gk_gpu_toolkit_version();

// Calls the GPU runtime (initializing it) and runs the probe kernel when a device is there.
// Call only after graphkiln.device has checked that this build carries the device's ISA.
GpuProbeInfo gk_gpu_probe_info();

}  // namespace graphkiln
