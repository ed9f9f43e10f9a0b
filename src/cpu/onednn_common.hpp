// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What the oneDNN-based kernels share: one CPU engine, memory descriptors for our tensors
// (any strides, so channels-last data needs no reorder) and error messages.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/executor.hpp"
#include "core/kernel.hpp"

namespace graphkiln {

dnnl::engine& onednn_engine();

dnnl::memory::data_type onednn_type(DType dtype);  // throws for types oneDNN lacks

// A descriptor with the tensor's own dims and strides (elements).
dnnl::memory::desc onednn_desc(const TensorInfo& t);
// Same, with other dims (e.g. a 2-D view of a contiguous tensor).
dnnl::memory::desc onednn_desc(DType dtype, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& strides);

// Executes `primitive` with `args` on a fresh stream of the engine, waiting for it.
void onednn_execute(const dnnl::primitive& primitive,
                    const std::unordered_map<int, dnnl::memory>& args);

// A copy of `src` (constant data, described by `from`) laid out as `to`, made at build time.
// Inside an Executor's build it is recorded as the step's next packed constant; where the
// step was given saved bytes of that packing in exactly this layout (a loaded program), those
// are used as they are (no reorder; no copy when they are 64-byte aligned).
dnnl::memory onednn_reorder_constant(const dnnl::memory::desc& from, const void* src,
                                     const dnnl::memory::desc& to);

// A constant the kernel packs with its own code (not a oneDNN reorder) into `nbytes` bytes
// named by `layout`, recorded like onednn_reorder_constant's packings: the step's saved bytes
// of that layout where it has them (used in place when 64-byte aligned, else copied), else a
// fresh buffer that `fill` writes. `owner` holds whatever buffer the kernel must keep.
const void* own_packed_constant(const std::string& layout, size_t nbytes,
                                const std::function<void(void*)>& fill,
                                std::shared_ptr<void>& owner);

// A text naming a memory layout exactly (type, dims, padding, strides, blocks, size): equal
// texts mean equal byte layouts.
std::string onednn_layout_key(const dnnl::memory::desc& desc);

// oneDNN's reference and gemm-based implementations: the kernels try another layout first.
bool onednn_slow_impl(const std::string& impl);

// The caller's tensor, bound per run, and, when the primitive wants another layout, the
// kernel's own buffer with the reorder between them (before the primitive for an input,
// after it for an output).
class StagedMemory {
 public:
  StagedMemory() = default;
  StagedMemory(const dnnl::memory::desc& user, const dnnl::memory::desc& own, bool output);
  const dnnl::memory& arg() const { return arg_; }  // what the primitive reads or writes
  void bind(const void* data) { user_.set_data_handle(const_cast<void*>(data)); }
  void before(dnnl::stream& stream) {
    if (reorder_ && !output_) reorder_.execute(stream, user_, arg_);
  }
  void after(dnnl::stream& stream) {
    if (reorder_ && output_) reorder_.execute(stream, arg_, user_);
  }

 private:
  dnnl::memory user_, arg_;
  dnnl::reorder reorder_;
  bool output_ = false;
};

}  // namespace graphkiln
