// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// MatMulNBits (onnxruntime's com.microsoft weight-only int4 / int8 MatMul) on the GPU, with the
// weights kept packed and dequantized in registers: f32 A [M, K] times the block-quantized W
// [N, K], transposed, plus an optional f32 bias [N]. The layout is src/cpu/matmul_nbits.cpp's:
// B u8 [N, k_blocks, blob] (codes low bits first in each byte), scales f32 [N * k_blocks],
// zero points absent (2^(bits-1)), u8 packed like the codes (one row of
// ceil(k_blocks * bits / 8) bytes per n) or f32 [N * k_blocks].
// A row of W is one contiguous stream of codes (k_blocks * block_size of them, the last block
// padded), so each lane of a warp reads 8 consecutive codes at once (4 bytes of int4, 8 of
// int8; block_size is a power of two >= 16, so the 8 share a block and its scale), and a warp
// covers kRows rows of W together, reading each 8 floats of A once for all of them. Per
// block of codes: scale * sum((code - zero) * a), in float; the lanes' sums meet in a warp
// reduction. Rows of A are taken kTileM at a time (registers), so batch 1 (a GEMV, bound by the
// weights' bytes) reads W once. targets/ref/matmul_nbits.py is the oracle.
#include "gpu/common.hpp"

#include <cstdint>

#include "gpu/block_reduce.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

constexpr int kRows = 4;         // rows of W (outputs n) per warp
constexpr int kTileM = 4;        // rows of A per pass over W
constexpr int kWarpsPerBlock = 4;
constexpr int kCodesPerLane = 8;  // consecutive codes a lane takes per step

enum class Zero { kNone, kPacked, kFloat };

struct Shape {
  int64_t m, n, k, k_blocks, block, zero_row;
};

template <int BITS>
__device__ inline void load_codes(const uint8_t* row, int64_t k0, int codes[kCodesPerLane]) {
  if constexpr (BITS == 4) {
    const uint32_t word = *reinterpret_cast<const uint32_t*>(row + k0 / 2);
#pragma unroll
    for (int i = 0; i < kCodesPerLane; ++i) codes[i] = (word >> (4 * i)) & 0xF;
  } else {
    const uint2 words = *reinterpret_cast<const uint2*>(row + k0);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      codes[i] = (words.x >> (8 * i)) & 0xFF;
      codes[4 + i] = (words.y >> (8 * i)) & 0xFF;
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
__device__ inline void load_a(const float* a_row, int64_t k0, int64_t k, float out[8]) {
  if (VEC && k0 + kCodesPerLane <= k) {
    const float4 lo = *reinterpret_cast<const float4*>(a_row + k0);
    const float4 hi = *reinterpret_cast<const float4*>(a_row + k0 + 4);
    out[0] = lo.x, out[1] = lo.y, out[2] = lo.z, out[3] = lo.w;
    out[4] = hi.x, out[5] = hi.y, out[6] = hi.z, out[7] = hi.w;
    return;
  }
#pragma unroll
  for (int i = 0; i < kCodesPerLane; ++i) out[i] = k0 + i < k ? a_row[k0 + i] : 0.f;
}

// One warp: outputs n0 .. n0 + kRows - 1 for every row of A.
template <int BITS, Zero ZERO, bool VEC>
__global__ void matmul_nbits(const float* a, const uint8_t* b, const float* scales,
                             const void* zero, const float* bias, float* y, Shape s) {
  const int lane = threadIdx.x % warpSize;
  const int64_t n0 =
      (static_cast<int64_t>(blockIdx.x) * (blockDim.x / warpSize) + threadIdx.x / warpSize) * kRows;
  if (n0 >= s.n) return;  // whole warps leave together: the shuffles below stay full
  const int64_t row_bytes = s.k_blocks * s.block * BITS / 8;
  const int64_t steps = (s.k + kCodesPerLane - 1) / kCodesPerLane;  // codes past K: padding
  for (int64_t m0 = 0; m0 < s.m; m0 += kTileM) {
    float acc[kTileM][kRows] = {};
    for (int64_t step = lane; step < steps; step += warpSize) {
      const int64_t k0 = step * kCodesPerLane;
      const int64_t j = k0 / s.block;
      float av[kTileM][kCodesPerLane];
#pragma unroll
      for (int t = 0; t < kTileM; ++t) {
        if (m0 + t < s.m) {
          load_a<VEC>(a + (m0 + t) * s.k, k0, s.k, av[t]);
        } else {
#pragma unroll
          for (int i = 0; i < kCodesPerLane; ++i) av[t][i] = 0.f;
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t n = n0 + r;
        if (n >= s.n) break;
        int codes[kCodesPerLane];
        load_codes<BITS>(b + n * row_bytes, k0, codes);
        const float zp = zero_of<BITS, ZERO>(zero, s, n, j);
        const float scale = scales[n * s.k_blocks + j];
        float w[kCodesPerLane];
#pragma unroll
        for (int i = 0; i < kCodesPerLane; ++i) w[i] = static_cast<float>(codes[i]) - zp;
#pragma unroll
        for (int t = 0; t < kTileM; ++t) {
          float dot = 0.f;
#pragma unroll
          for (int i = 0; i < kCodesPerLane; ++i) dot += w[i] * av[t][i];
          acc[t][r] += scale * dot;
        }
      }
    }
#pragma unroll
    for (int t = 0; t < kTileM; ++t) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float sum = warp_reduce(acc[t][r], SumOp());
        const int64_t n = n0 + r;
        if (lane == 0 && m0 + t < s.m && n < s.n)
          y[(m0 + t) * s.n + n] = bias ? sum + bias[n] : sum;
      }
    }
  }
}

class MatMulNBitsKernel : public Kernel {
 public:
  explicit MatMulNBitsKernel(const KernelSpec& spec)
      : bits_(static_cast<int>(spec.attrs.get_int("bits"))), has_bias_(spec.has_input(4)) {
    s_.k = spec.attrs.get_int("K");
    s_.n = spec.attrs.get_int("N");
    s_.block = spec.attrs.get_int("block_size");
    if (bits_ != 4 && bits_ != 8) spec_error(spec, "bits must be 4 or 8");
    if (s_.block < 16 || (s_.block & (s_.block - 1)) != 0)
      spec_error(spec, "block_size must be a power of two >= 16");
    if (s_.k < 1 || s_.n < 1) spec_error(spec, "K and N must be positive");
    s_.k_blocks = (s_.k + s_.block - 1) / s_.block;
    s_.zero_row = (s_.k_blocks * bits_ + 7) / 8;
    s_.m = spec.inputs.at(0).numel() / s_.k;
    if (spec.inputs.at(0).dtype != DType::f32 || spec.outputs.at(0).dtype != DType::f32 ||
        spec.inputs.at(2).dtype != DType::f32)
      spec_error(spec, "A, scales and the output must be float32");
    if (!spec.inputs.at(0).is_contiguous() || !spec.outputs.at(0).is_contiguous())
      spec_error(spec, "needs contiguous A and output");
#if defined(__HIP__)  // 64 on CDNA, 32 on RDNA: a block covers kWarpsPerBlock whole warps
    int device = 0;
    hipDeviceProp_t props;
    check(hipGetDevice(&device), "MatMulNBits: hipGetDevice");
    check(hipGetDeviceProperties(&props, device), "MatMulNBits: hipGetDeviceProperties");
    warp_size_ = props.warpSize;
#endif
    zero_ = !spec.has_input(3)                      ? Zero::kNone
            : spec.inputs.at(3).dtype == DType::f32 ? Zero::kFloat
                                                    : Zero::kPacked;
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (s_.m == 0) return;
    const bool vec = s_.k % 4 == 0 && reinterpret_cast<uintptr_t>(inputs[0]) % 16 == 0;
    if (bits_ == 4) {
      launch_zero<4>(vec, inputs, outputs, ctx);
    } else {
      launch_zero<8>(vec, inputs, outputs, ctx);
    }
    check_launch("matmul_nbits");
  }

 private:
  template <int BITS>
  void launch_zero(bool vec, const void* const* in, void* const* out, Context& ctx) const {
    switch (zero_) {
      case Zero::kNone: return launch<BITS, Zero::kNone>(vec, in, out, ctx);
      case Zero::kPacked: return launch<BITS, Zero::kPacked>(vec, in, out, ctx);
      case Zero::kFloat: return launch<BITS, Zero::kFloat>(vec, in, out, ctx);
    }
  }

  template <int BITS, Zero ZERO>
  void launch(bool vec, const void* const* in, void* const* out, Context& ctx) const {
    const int warp = warp_size_;
    const int64_t warps = (s_.n + kRows - 1) / kRows;
    const unsigned grid = static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
    const auto* a = static_cast<const float*>(in[0]);
    const auto* b = static_cast<const uint8_t*>(in[1]);
    const auto* scales = static_cast<const float*>(in[2]);
    const auto* bias = has_bias_ ? static_cast<const float*>(in[4]) : nullptr;
    auto* y = static_cast<float*>(out[0]);
    if (vec) {
      matmul_nbits<BITS, ZERO, true>
          <<<grid, kWarpsPerBlock * warp, 0, ctx.stream>>>(a, b, scales, in[3], bias, y, s_);
    } else {
      matmul_nbits<BITS, ZERO, false>
          <<<grid, kWarpsPerBlock * warp, 0, ctx.stream>>>(a, b, scales, in[3], bias, y, s_);
    }
  }

  Shape s_{};
  int warp_size_ = 32;
  int bits_;
  bool has_bias_;
  Zero zero_ = Zero::kNone;
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_nbits(const KernelSpec& spec) {
  return std::make_unique<MatMulNBitsKernel>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
