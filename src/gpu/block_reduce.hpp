// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Block-wide sum and max through shared memory (any warp or wavefront size), for the row
// kernels of softmax, layer norm and the reductions. Every thread of the block must call.
#pragma once

#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {

constexpr int kRowThreads = 256;

template <typename F>
__device__ inline float block_reduce(float v, F combine) {
  __shared__ float scratch[kRowThreads];
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) scratch[threadIdx.x] = combine(scratch[threadIdx.x], scratch[threadIdx.x + half]);
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
