// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#pragma once

#include <string>
#include <vector>

namespace graphkiln {

// What this build of the core contains: reported by graphkiln._core.build_info().
struct BuildInfo {
  std::string version;
  std::string compiler;
  std::string gpu_platform;              // "none", "amd" or "nvidia"
  std::vector<std::string> gpu_targets;  // ISAs compiled in (gfx90a, sm_90, ...)
  std::string gpu_toolkit;               // "HIP 5.2.21153", "CUDA 13.0"; empty when CPU only
};

BuildInfo build_info();

}  // namespace graphkiln
