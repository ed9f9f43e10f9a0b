// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The direct convolution for few input channels (a CNN's first layer, "stem": 3 colour
// channels in, 16-96 maps out, 3x3 to 16x16 windows), used by conv.cpp's "Conv" on AVX-512
// CPUs. oneDNN has no fast kernel from a plain (NCHW) image to a channels-last output; it
// reorders the image first and its channels-last kernel for 3 input channels runs at a
// fraction of its peak. This one reads the plain image where it is and writes channels-last
// rows, each output pixel's channels in vectors of 16. The shared declarations of
// stem_conv.cpp (the kernel) and stem_conv_avx512.cpp (its inner loop).
#pragma once

#include <cstdint>
#include <memory>

#include "core/kernel.hpp"

namespace graphkiln {

// A kernel for a "Conv" step this loop serves (f32, 2-D, one group, at most 8 input channels,
// at least 24 output channels,
// no dilation, plain X, channels-last Y, constant W of at most 128 KiB packed, a post-op chain of relu / clip / linear /
// hardswish / hardsigmoid, optionally closed by swish); nullptr for any other step, and on a
// CPU without AVX-512. GRAPHKILN_CPU_STEM=0 turns it off (such steps stay on oneDNN).
std::unique_ptr<Kernel> make_stem_conv(const KernelSpec& spec);

namespace stem {

constexpr int kLanes = 16;      // floats per vector
constexpr int kMaxVectors = 4;  // output channels per pass: up to 64
constexpr int kMaxPostOps = 8;

enum class PostKind : int { relu, clip, linear, hardswish, hardsigmoid };

struct PostOp {
  PostKind kind = PostKind::relu;
  float alpha = 0, beta = 0;
};

// One convolution's geometry and this run's pointers. Weights are packed at build time as
// [C][KH][KW][k_pad] (k_pad: K rounded up to 16, zeros past K); the bias has k_pad values.
struct Problem {
  int64_t channels, in_h, in_w, maps, k_pad, kernel_h, kernel_w, stride_h, stride_w;
  int64_t pad_top, pad_left, out_h, out_w;
  // output columns whose whole window lies inside the image: [interior_lo, interior_hi)
  int64_t interior_lo, interior_hi;
  const float* w = nullptr;
  const float* bias = nullptr;
  int post_count = 0;
  PostOp post[kMaxPostOps];
};

// Output row `oh` of one image: x points at the image (C, H, W), y at the row (OW, K).
void row_avx512(const Problem& p, const float* x, int64_t oh, float* y);

}  // namespace stem
}  // namespace graphkiln
