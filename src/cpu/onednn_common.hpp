// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What the oneDNN-based kernels share: one CPU engine, memory descriptors for our tensors
// (any strides, so channels-last data needs no reorder) and error messages.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <unordered_map>

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
dnnl::memory onednn_reorder_constant(const dnnl::memory::desc& from, const void* src,
                                     const dnnl::memory::desc& to);

}  // namespace graphkiln
