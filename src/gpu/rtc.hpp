// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Runtime compilation of generated GPU source for the live device: NVRTC on NVIDIA, hipRTC
// on AMD, both loaded at run time (dlopen), so neither the build nor the wheel needs them.
// Compiled code is cached on disk (kernel_cache.hpp) under a key made of the source, the
// device architecture, the compiler's version and graphkiln's version. Modules load once and
// are launched on the caller's stream (no sync, no allocation: capturable in a graph).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpu/common.hpp"
#include "gpu/jit.hpp"  // jit_status()

namespace graphkiln {
namespace gpu {

// A loaded module's entry points.
class JitModule {
 public:
  virtual ~JitModule() = default;
  size_t size() const { return entries_.size(); }
  // Launches entry `index` with `args` (pointers to each argument) on `stream`.
  virtual void launch(size_t index, unsigned blocks, unsigned threads, void** args,
                      hipStream_t stream) const = 0;

 protected:
  std::vector<std::string> entries_;
};

// The module of `source` with `entries` compiled for the current device, or null with
// `why_not` set (no runtime compiler, GRAPHKILN_GPU_JIT=0, a compile or load error).
std::shared_ptr<const JitModule> jit_module(const std::string& source,
                                            const std::vector<std::string>& entries,
                                            std::string* why_not);

// Starts compiling these sources (with their entries) on worker threads, for the
// jit_module calls that follow: a plan's first generated kernel names the others, so they
// compile in parallel instead of one after another. Skips what is cached or loaded.
void jit_prefetch(const std::vector<std::string>& sources,
                  const std::vector<std::vector<std::string>>& entries);

}  // namespace gpu
}  // namespace graphkiln
