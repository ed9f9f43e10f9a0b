// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Block-wide sum and max (warp shuffles, then shared memory; any warp or wavefront size), for
// the row kernels of softmax, layer norm and the reductions. Every thread of the block must
// call.
#pragma once

#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {

constexpr int kRowThreads = 256;

template <typename F>
__device__ inline float warp_reduce(float v, F combine) {
#if defined(__HIP__)
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v = combine(v, __shfl_xor(v, offset));
#else
  for (int offset = 16; offset > 0; offset /= 2)
    v = combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
#endif
  return v;
}

// Whole warps: shuffles within each warp, then every thread combines the warps' partials in
// the same order (two barriers). A block that is not whole warps (a 32-thread block on a
// 64-lane AMD wavefront) reduces through shared memory as a tree.
template <typename F>
__device__ inline float block_reduce(float v, F combine) {
  __shared__ float scratch[kRowThreads];
  if (blockDim.x % warpSize == 0) {
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    const int warps = blockDim.x / warpSize;
    v = warp_reduce(v, combine);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float result = scratch[0];
    for (int w = 1; w < warps; ++w) result = combine(result, scratch[w]);
    __syncthreads();  // scratch is reused by the next call
    return result;
  }
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      scratch[threadIdx.x] = combine(scratch[threadIdx.x], scratch[threadIdx.x + half]);
    __syncthreads();
  }
  const float result = scratch[0];
  __syncthreads();
  return result;
}

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

}  // namespace gpu
}  // namespace graphkiln
