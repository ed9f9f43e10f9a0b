// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// oneDNN post-op chains (eltwise and binary) from kernel attributes, shared by the kernels
// that run a fused epilogue (convolution, ...). The Python lowering writes four parallel
// lists: post_ops (names below), post_alpha, post_beta (eltwise parameters) and post_arg
// (for a binary post-op, the kernel input holding its second operand; -1 otherwise).
//   eltwise: relu (alpha = slope), clip (alpha = min, beta = max), logistic, tanh, elu,
//            exp, log, abs, sqrt, square, linear (alpha * x + beta), hardswish, hardsigmoid,
//            gelu_erf, gelu_tanh, swish, soft_relu, mish
//   binary:  add, sub, mul, div, max, min (dst = dst op operand)
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>
#include <utility>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {

class OnednnPostOps {
 public:
  // Reads the attributes of `spec`; binary operands are described with their own strides,
  // padded with leading 1-dims to the rank of `dst_dims`. With `channels_last`, operands of
  // the destination's full shape that are not channels-last are reordered into buffers of
  // their own on each run (oneDNN's fast kernels want them in the destination's layout).
  OnednnPostOps(const KernelSpec& spec, const std::vector<int64_t>& dst_dims,
                bool channels_last = false);

  const dnnl::post_ops& ops() const { return ops_; }
  bool empty() const { return ops_.len() == 0; }
  // Adds the binary operands' memories to `args` (once, at build time).
  void add_args(std::unordered_map<int, dnnl::memory>& args) const;
  // Points the binary operands' memories at this run's inputs (and runs the reorders).
  void bind(const void* const* inputs, dnnl::stream& stream);
  void bind(const void* const* inputs);  // same, on a stream of its own when it must reorder

 private:
  dnnl::post_ops ops_;
  std::vector<std::pair<int, dnnl::memory>> binary_;  // (kernel input, memory) per binary
  std::vector<int> binary_index_;                    // post-op index of each binary
  struct Staged {
    int input;
    dnnl::memory user, staged;
    dnnl::reorder reorder;
  };
  std::vector<Staged> staged_;
};

}  // namespace graphkiln
