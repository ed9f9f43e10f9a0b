// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Winograd F(4x4, 3x3) convolution for the 3x3 stride-1 f32 convolutions of CNNs, used by
// conv.cpp's "Conv" where it needs fewer multiplications than oneDNN's direct kernels.
// The shared declarations of winograd_conv.cpp (the kernel) and the per-ISA builds of its
// inner loops (winograd_f43.inc, compiled by winograd_f43_avx2.cpp / winograd_f43_avx512.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "core/kernel.hpp"

namespace graphkiln {

// A kernel for a "Conv" step Winograd serves (f32, 2-D, 3x3, stride 1, no dilation, one
// group, channels-last X and Y, constant W, at least 16 channels in and out, a post-op chain
// of relu / clip / linear and binary add / sub / mul / max / min over Y-shaped (channels-last
// or plain) or per-channel operands) when it saves enough multiplications; nullptr for any other step.
// GRAPHKILN_CPU_WINOGRAD=0 turns it off (every Conv stays on oneDNN); =always takes it for
// every step it serves, whatever the cost model says, and =avx2 does so with the AVX2 build
// of its loops even on an AVX-512 CPU (both for tests: the kernel on any shape, on both ISAs).
std::unique_ptr<Kernel> make_winograd_conv(const KernelSpec& spec);

namespace winograd {

constexpr int kAlpha = 6;                  // input tile edge: 4 outputs + 3 taps - 1
constexpr int kOut = 4;                    // output tile edge
constexpr int kPoints = kAlpha * kAlpha;   // 36 transformed points per tile
constexpr int kRows = 6;                   // tiles per GEMM micro-kernel call
constexpr int kMaxPostOps = 8;

enum class PostKind : int { relu, clip, linear, add, sub, mul, max, min };

// A binary operand is read at n * image + (oh * OW + ow) * pixel + k * channel: Y-shaped
// channels-last (OH*OW*K, K, 1), Y-shaped plain (K*OH*OW, 1, OH*OW) or one value per
// channel (0, 0, 1).
struct PostOp {
  PostKind kind = PostKind::relu;
  float alpha = 0, beta = 0;
  const float* operand = nullptr;
  int64_t image = 0, pixel = 0, channel = 1;
};

// One convolution's geometry and this run's pointers. Channel counts are padded to the
// ISA's vector widths in the scratch and packed-weight layouts: c_pad to `lanes`, k_pad to
// `chunk` (two vectors: the GEMM's column block).
struct Problem {
  int64_t batch, channels, maps, in_h, in_w, out_h, out_w, pad_top, pad_left;
  int64_t tiles_h, tiles_w, c_pad, k_pad;
  const float* x = nullptr;      // N, H, W, C
  const float* u = nullptr;      // packed transformed weights: [k_pad / chunk][36][C][chunk]
  const float* bias = nullptr;   // k_pad values (zeros past K)
  float* y = nullptr;            // N, OH, OW, K
  int post_count = 0;
  PostOp post[kMaxPostOps];
};

// The two halves of the work on a block of tiles [t0, t0 + count):
//   InputsFn: transform the inputs into `v` (36 x c_pad floats a tile, tile-major);
//   ProductsFn: for output channel chunks [chunk0, chunk1), multiply `v` (read up to
//   round_up(count, kRows) tiles) into `m` (36 x round_up(count, kRows) x
//   (chunk1 - chunk0) * chunk floats) and transform back into Y with bias and post-ops.
using InputsFn = void (*)(const Problem& p, int64_t t0, int64_t count, float* v);
using ProductsFn = void (*)(const Problem& p, int64_t t0, int64_t count, int64_t chunk0,
                            int64_t chunk1, const float* v, float* m);

struct Isa {
  int lanes;   // floats per vector: 16 (AVX-512) or 8 (AVX2)
  int chunk;   // output channels per GEMM column block: 2 vectors
  InputsFn inputs;
  ProductsFn products;
  const char* name;
};

void inputs_avx2(const Problem& p, int64_t t0, int64_t count, float* v);
void products_avx2(const Problem& p, int64_t t0, int64_t count, int64_t chunk0, int64_t chunk1,
                   const float* v, float* m);
void inputs_avx512(const Problem& p, int64_t t0, int64_t count, float* v);
void products_avx512(const Problem& p, int64_t t0, int64_t count, int64_t chunk0, int64_t chunk1,
                     const float* v, float* m);

}  // namespace winograd
}  // namespace graphkiln
