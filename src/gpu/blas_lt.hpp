// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// GEMMs with a fused epilogue (a bias row added to every output row, then optionally ReLU)
// through cuBLASLt, loaded at run time like cuBLAS (blas.hip). One plan (descriptors and the
// heuristic's algorithm) per problem, made on first use; run() also sets the bias pointer in
// the plan's descriptor, so an LtGemms belongs to one Blas, that is one execution context, and
// is never called from two threads at once (no lock). Elsewhere (AMD, no libcublasLt, an
// unsupported problem) run() answers false and the caller runs the product and then its own
// epilogue kernel.
#pragma once

#include <cstddef>
#include <memory>

#include "gpu/blas.hpp"
#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {

class LtGemms {
 public:
  LtGemms();
  ~LtGemms();
  LtGemms(const LtGemms&) = delete;
  LtGemms& operator=(const LtGemms&) = delete;

  // C = alpha * op(A) op(B) + bias (then ReLU when g.relu), as one cuBLASLt call on `stream`
  // with `workspace` (bytes); false when this problem cannot go through cuBLASLt (nothing
  // was launched then).
  bool run(const GemmArgs& g, hipStream_t stream, void* workspace, size_t bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpu
}  // namespace graphkiln
