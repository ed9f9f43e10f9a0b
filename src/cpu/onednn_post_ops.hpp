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
  // With `own_swish_tail`, a chain that ends in swish leaves it out of oneDNN's ops: the
  // kernel calls apply_tail on its output after the primitive (swish_tail.hpp says why).
  OnednnPostOps(const KernelSpec& spec, const std::vector<int64_t>& dst_dims,
                bool channels_last = false, bool own_swish_tail = false);

  const dnnl::post_ops& ops() const { return ops_; }
  bool empty() const { return ops_.len() == 0; }
  // The ops left to the kernel (own_swish_tail), on its float output at `data` (element
  // `dims` and `strides`, as the primitive wrote it).
  bool has_tail() const { return tail_swish_; }
  void apply_tail(void* data, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& strides) const;
  // Adds the binary operands' memories to `args` (once, at build time).
  void add_args(std::unordered_map<int, dnnl::memory>& args) const;
  // Points the binary operands' memories at this run's inputs (and runs the reorders).
  void bind(const void* const* inputs, dnnl::stream& stream);
  void bind(const void* const* inputs);  // same, on a stream of its own when it must reorder

 private:
  dnnl::post_ops ops_;
  bool tail_swish_ = false;
  float tail_alpha_ = 1.0f;
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
