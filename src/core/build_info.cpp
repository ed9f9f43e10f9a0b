// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "core/build_info.hpp"

#include <sstream>

#ifdef GRAPHKILN_WITH_GPU
#include "gpu/probe.hpp"
#endif  // GRAPHKILN_WITH_GPU

namespace graphkiln {
namespace {

std::string compiler_name() {
  std::ostringstream out;
#if defined(__clang__)
  out << "clang " << __clang_major__ << "." << __clang_minor__ << "." << __clang_patchlevel__;
#elif defined(__GNUC__)
  out << "gcc " << __GNUC__ << "." << __GNUC_MINOR__ << "." << __GNUC_PATCHLEVEL__;
#else
  out << "unknown";
#endif
  return out.str();
}

std::vector<std::string> split_targets(const std::string& list) {
  std::vector<std::string> out;
  std::istringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string gpu_toolkit() {
#ifdef GRAPHKILN_WITH_GPU
  return gk_gpu_toolkit_version();
#elif defined(GRAPHKILN_GPU_RUNTIME_ABSENT)
  // the CPU-only module of a ROCm wheel: the toolkit its GPU module was built with
  return GRAPHKILN_GPU_RUNTIME_ABSENT;
#else
  return "";
#endif  // GRAPHKILN_WITH_GPU
}

}  // namespace

// Compile-time facts only: no GPU runtime call, so it is safe before the device check.
BuildInfo build_info() {
  return BuildInfo{GRAPHKILN_VERSION, compiler_name(), GRAPHKILN_GPU_PLATFORM,
                   split_targets(GRAPHKILN_GPU_TARGETS), gpu_toolkit()};
}

}  // namespace graphkiln
