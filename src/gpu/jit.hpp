// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What the runtime compiler of generated GPU kernels (rtc.hip) can do in this process, in
// plain C++ (no GPU headers) for the Python bindings.
#pragma once

#include <string>

namespace graphkiln {
namespace gpu {

// One line: "nvrtc 13.0, sm_90, cache <dir>" or "off: <why>" (GRAPHKILN_GPU_JIT=0, no
// NVRTC / hipRTC found, no device).
std::string jit_status();

}  // namespace gpu
}  // namespace graphkiln
