// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// MatMulNBits' register kernel (src/gpu/matmul_nbits.hip holds the op; this header also serves
// benchmarks/matmul_nbits_probe.cu, which times the same code against the memory it reads):
// f32 A [M, K] times the block-quantized W [N, K] transposed (+ bias), W kept packed and
// dequantized in registers. A row of W is one contiguous stream of codes (k_blocks * block_size
// of them, the last block padded). A block of WARPS warps computes ROWS outputs n together:
// its threads take the row's codes a load at a time (16 bytes where the block size allows: 32
// int4 or 16 int8 codes, all in one quantization block, so one scale and zero point),
// interleaved across the whole block so that every thread has loads in flight (a GEMV is bound
// by the weights' bytes), and each 8 floats of A read serve all ROWS rows (more rows per block:
// fewer reads of A per byte of W, which at 4 rows cost more load instructions than W itself).
// Per load: scale * sum((code - zero) * a), in float; the threads' sums meet in warp shuffles
// and then in shared memory. Rows of A are taken TILE at a time (registers), so batch 1 reads W
// once and small batches re-read it from L2.
#pragma once

#include <cstdint>

#include "gpu/block_reduce.hpp"
#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {
namespace nbits {

constexpr int kChunk = 8;  // codes per dot product step (32 bits of int4, 64 of int8)

enum class Zero { kNone, kPacked, kFloat };

struct Shape {
  int64_t m, n, k, k_blocks, block, zero_row;
};

// Loads of W's codes: read once per pass, so on NVIDIA with the streaming hint (evict first:
// they do not push A out of the caches); -DGRAPHKILN_NBITS_PLAIN_LOADS compiles plain loads
// (benchmarks/matmul_nbits_probe.cu compares the two).
template <typename T>
__device__ inline T load_stream(const uint8_t* p) {
#if defined(__CUDACC__) && !defined(__HIP__) && !defined(GRAPHKILN_NBITS_PLAIN_LOADS)
  return __ldcs(reinterpret_cast<const T*>(p));
#else
  return *reinterpret_cast<const T*>(p);
#endif
}

// LOAD bytes of codes (8 or 16) as 32-bit words
template <int LOAD>
__device__ inline void load_words(const uint8_t* p, uint32_t words[LOAD / 4]) {
  if constexpr (LOAD == 16) {
    const uint4 v = load_stream<uint4>(p);
    words[0] = v.x, words[1] = v.y, words[2] = v.z, words[3] = v.w;
  } else {
    const uint2 v = load_stream<uint2>(p);
    words[0] = v.x, words[1] = v.y;
  }
}

// A code as a float without an int-to-float conversion (a quarter-rate instruction on NVIDIA
// GPUs, which bounded the kernel): 2^23 + code has the code in its low mantissa bits.
__device__ inline float magic_code(uint32_t code) { return __uint_as_float(code | 0x4B000000u); }
constexpr float kMagic = 8388608.f;  // 2^23

// the kChunk codes of chunk c of the loaded words, minus the zero point: offset is 2^23 + zero
// (exact for the integer zero points), or 2^23 alone and zero the float zero point
template <int BITS>
__device__ inline void chunk_weights(const uint32_t* words, int c, float offset, float zero,
                                     float w[kChunk]) {
  if constexpr (BITS == 4) {
    const uint32_t word = words[c];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) w[i] = magic_code((word >> (4 * i)) & 0xF) - offset - zero;
  } else {
    const uint32_t lo = words[2 * c], hi = words[2 * c + 1];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w[i] = magic_code((lo >> (8 * i)) & 0xFF) - offset - zero;
      w[4 + i] = magic_code((hi >> (8 * i)) & 0xFF) - offset - zero;
    }
  }
}

template <int BITS, Zero ZERO>
__device__ inline float zero_of(const void* zero, const Shape& s, int64_t n, int64_t j) {
  if constexpr (ZERO == Zero::kNone) {
    return static_cast<float>(1 << (BITS - 1));
  } else if constexpr (ZERO == Zero::kFloat) {
    return static_cast<const float*>(zero)[n * s.k_blocks + j];
  } else {
    const uint8_t* row = static_cast<const uint8_t*>(zero) + n * s.zero_row;
    if constexpr (BITS == 8) return row[j];
    return static_cast<float>((row[j / 2] >> ((j % 2) * 4)) & 0xF);
  }
}

// 8 floats of A from k0 (fewer past K: zeros), as two 16-byte loads where A's rows allow
template <bool VEC>
__device__ inline void load_a(const float* a_row, int64_t k0, int64_t k, float out[kChunk]) {
  if (VEC && k0 + kChunk <= k) {
    const float4 lo = *reinterpret_cast<const float4*>(a_row + k0);
    const float4 hi = *reinterpret_cast<const float4*>(a_row + k0 + 4);
    out[0] = lo.x, out[1] = lo.y, out[2] = lo.z, out[3] = lo.w;
    out[4] = hi.x, out[5] = hi.y, out[6] = hi.z, out[7] = hi.w;
    return;
  }
#pragma unroll
  for (int i = 0; i < kChunk; ++i) out[i] = k0 + i < k ? a_row[k0 + i] : 0.f;
}

// One block: outputs n0 .. n0 + ROWS - 1 for every row of A. LOAD: bytes of codes a thread
// reads at once (8 or 16, dividing the block's bytes: one scale per load). TILE: rows of A
// per pass over W. WARPS: warps per block (launch with WARPS whole warps).
template <int BITS, Zero ZERO, bool VEC, int LOAD, int TILE, int ROWS, int WARPS>
__global__ void matmul_nbits(const float* a, const uint8_t* b, const float* scales,
                             const void* zero, const float* bias, float* y, Shape s) {
  constexpr int kCodes = LOAD * 8 / BITS;  // codes per load
  __shared__ float partial[TILE * ROWS][WARPS];
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * ROWS;
  const int64_t row_bytes = s.k_blocks * s.block * BITS / 8;
  const int64_t steps = (s.k + kCodes - 1) / kCodes;  // codes past K: padding, A there is 0
  for (int64_t m0 = 0; m0 < s.m; m0 += TILE) {
    float acc[TILE][ROWS] = {};
    for (int64_t step = threadIdx.x; step < steps; step += blockDim.x) {
      const int64_t k0 = step * kCodes;
      const int64_t j = k0 / s.block;
      uint32_t words[ROWS][LOAD / 4];
      float scale[ROWS], offset[ROWS], zp[ROWS];
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const int64_t n = n0 + r < s.n ? n0 + r : s.n - 1;  // rows past N: computed, not kept
        load_words<LOAD>(b + n * row_bytes + k0 * BITS / 8, words[r]);
        scale[r] = scales[n * s.k_blocks + j];
        const float z = zero_of<BITS, ZERO>(zero, s, n, j);
        offset[r] = ZERO == Zero::kFloat ? kMagic : kMagic + z;  // 2^23 + z: exact below 2^8
        zp[r] = ZERO == Zero::kFloat ? z : 0.f;
      }
#pragma unroll
      for (int c = 0; c < kCodes / kChunk; ++c) {
        float av[TILE][kChunk];
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
          if (m0 + t < s.m) {
            load_a<VEC>(a + (m0 + t) * s.k, k0 + c * kChunk, s.k, av[t]);
          } else {
#pragma unroll
            for (int i = 0; i < kChunk; ++i) av[t][i] = 0.f;
          }
        }
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          float w[kChunk];
          chunk_weights<BITS>(words[r], c, offset[r], zp[r], w);
#pragma unroll
          for (int t = 0; t < TILE; ++t) {
            float dot = 0.f;
#pragma unroll
            for (int i = 0; i < kChunk; ++i) dot += w[i] * av[t][i];
            acc[t][r] += scale[r] * dot;
          }
        }
      }
    }
#pragma unroll
    for (int t = 0; t < TILE; ++t) {
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const float sum = warp_reduce(acc[t][r], SumOp());
        if (lane == 0) partial[t * ROWS + r][warp] = sum;
      }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < TILE * ROWS; i += blockDim.x) {
      const int t = i / ROWS, r = i % ROWS;
      const int64_t n = n0 + r;
      float sum = 0.f;
#pragma unroll
      for (int w = 0; w < WARPS; ++w) sum += partial[i][w];
      if (m0 + t < s.m && n < s.n) y[(m0 + t) * s.n + n] = bias ? sum + bias[n] : sum;
    }
    __syncthreads();  // partial is reused by the next rows of A
  }
}

}  // namespace nbits
}  // namespace gpu
}  // namespace graphkiln
