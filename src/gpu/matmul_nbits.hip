// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// MatMulNBits (onnxruntime's com.microsoft weight-only int4 / int8 MatMul) on the GPU, with the
// weights kept packed and dequantized in registers: f32 A [M, K] times the block-quantized W
// [N, K], transposed, plus an optional f32 bias [N]. The layout is src/cpu/matmul_nbits.cpp's:
// B u8 [N, k_blocks, blob] (codes low bits first in each byte), scales f32 [N * k_blocks],
// zero points absent (2^(bits-1)), u8 packed like the codes (one row of
// ceil(k_blocks * bits / 8) bytes per n) or f32 [N * k_blocks].
// A row of W is one contiguous stream of codes (k_blocks * block_size of them, the last block
// padded). A block of kWarps warps computes kRows outputs n together: its threads take the
// row's codes a load at a time (16 bytes where the block size allows: 32 int4 or 16 int8
// codes, all in one quantization block, so one scale and zero point), interleaved across the
// whole block so that every thread has loads in flight (a GEMV is bound by the weights' bytes;
// one warp per row left most of the memory system idle), and each 8 floats of A read serve all
// kRows rows. Per load: scale * sum((code - zero) * a), in float; the threads' sums meet in warp
// shuffles and then in shared memory. Rows of A are taken kTileM at a time (registers), so
// batch 1 reads W once and small batches re-read it from L2. From kGemmRows rows of A on (a
// prompt's prefill), W is dequantized to float32 in the workspace, a bounded slice of rows at a
// time, and the BLAS GEMM (cuBLAS / rocBLAS, float32) multiplies: the packed weight stays the
// only copy the program keeps. targets/ref/matmul_nbits.py is the oracle.
#include "gpu/common.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "gpu/blas.hpp"
#include "gpu/block_reduce.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

constexpr int kRows = 4;   // rows of W (outputs n) per block
constexpr int kTileM = 4;  // rows of A per pass over W (1 for a GEMV)
constexpr int kWarps = 4;  // warps per block, all on the same kRows rows
constexpr int kChunk = 8;  // codes per dot product step (32 bits of int4, 64 of int8)
// From this many rows of A on, W is dequantized into the workspace (kDequantBytes of it at a
// time) and multiplied by the BLAS GEMM: the register kernel passes over W once per kTileM
// rows, and a prefill's hundreds of rows make that compute-bound on CUDA cores. Measured on
// the H100 (4096 x 4096 int4): 16 rows took 210 us this way against 85 us in registers, 64
// rows 220 us against about 4 x 85.
constexpr int64_t kGemmRows = 48;
constexpr int64_t kDequantBytes = int64_t{64} << 20;

enum class Zero { kNone, kPacked, kFloat };

struct Shape {
  int64_t m, n, k, k_blocks, block, zero_row;
};

// LOAD bytes of codes (8 or 16) as 32-bit words
template <int LOAD>
__device__ inline void load_words(const uint8_t* p, uint32_t words[LOAD / 4]) {
  if constexpr (LOAD == 16) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    words[0] = v.x, words[1] = v.y, words[2] = v.z, words[3] = v.w;
  } else {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
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

// One block: outputs n0 .. n0 + kRows - 1 for every row of A. LOAD: bytes of codes a thread
// reads at once (8 or 16, dividing the block's bytes: one scale per load). TILE: rows of A
// per pass over W.
template <int BITS, Zero ZERO, bool VEC, int LOAD, int TILE>
__global__ void matmul_nbits(const float* a, const uint8_t* b, const float* scales,
                             const void* zero, const float* bias, float* y, Shape s) {
  constexpr int kCodes = LOAD * 8 / BITS;  // codes per load
  __shared__ float partial[TILE * kRows][kWarps];
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t row_bytes = s.k_blocks * s.block * BITS / 8;
  const int64_t steps = (s.k + kCodes - 1) / kCodes;  // codes past K: padding, A there is 0
  for (int64_t m0 = 0; m0 < s.m; m0 += TILE) {
    float acc[TILE][kRows] = {};
    for (int64_t step = threadIdx.x; step < steps; step += blockDim.x) {
      const int64_t k0 = step * kCodes;
      const int64_t j = k0 / s.block;
      uint32_t words[kRows][LOAD / 4];
      float scale[kRows], offset[kRows], zp[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
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
        for (int r = 0; r < kRows; ++r) {
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
      for (int r = 0; r < kRows; ++r) {
        const float sum = warp_reduce(acc[t][r], SumOp());
        if (lane == 0) partial[t * kRows + r][warp] = sum;
      }
    }
    __syncthreads();
    if (threadIdx.x < TILE * kRows) {
      const int t = threadIdx.x / kRows, r = threadIdx.x % kRows;
      const int64_t n = n0 + r;
      float sum = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) sum += partial[threadIdx.x][w];
      if (m0 + t < s.m && n < s.n) y[(m0 + t) * s.n + n] = bias ? sum + bias[n] : sum;
    }
    __syncthreads();  // partial is reused by the next rows of A
  }
}

// Rows n0 .. n0 + rows - 1 of W dequantized to float32, [rows, K] (the larger batches' path:
// then one GEMM); one thread per kChunk codes.
template <int BITS, Zero ZERO>
__global__ void dequantize_rows(const uint8_t* b, const float* scales, const void* zero, float* w,
                                Shape s, int64_t n0, int64_t rows) {
  const int64_t chunks = (s.k + kChunk - 1) / kChunk;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * chunks) return;
  const int64_t r = i / chunks, k0 = (i % chunks) * kChunk, n = n0 + r, j = k0 / s.block;
  const int64_t row_bytes = s.k_blocks * s.block * BITS / 8;
  uint32_t words[BITS / 4];
  const uint8_t* p = b + n * row_bytes + k0 * BITS / 8;
  words[0] = *reinterpret_cast<const uint32_t*>(p);
  if constexpr (BITS == 8) words[1] = *reinterpret_cast<const uint32_t*>(p + 4);
  const float z = zero_of<BITS, ZERO>(zero, s, n, j);
  float v[kChunk];
  chunk_weights<BITS>(words, 0, ZERO == Zero::kFloat ? kMagic : kMagic + z,
                      ZERO == Zero::kFloat ? z : 0.f, v);
  const float scale = scales[n * s.k_blocks + j];
  float* out = w + r * s.k + k0;
#pragma unroll
  for (int c = 0; c < kChunk; ++c)
    if (k0 + c < s.k) out[c] = scale * v[c];
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
#if defined(__HIP__)  // 64 on CDNA, 32 on RDNA: a block covers kWarps whole warps
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

  size_t workspace_bytes() const override {
    return s_.m >= kGemmRows ? static_cast<size_t>(gemm_rows() * s_.k) * sizeof(float) : 0;
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (s_.m == 0) return;
    if (s_.m >= kGemmRows) return run_gemm(inputs, outputs, ctx);
    const bool vec = s_.k % 4 == 0 && reinterpret_cast<uintptr_t>(inputs[0]) % 16 == 0;
    // 16-byte loads of codes where the block holds that many bytes and B is aligned for them
    int load = static_cast<int>(s_.block * bits_ / 8 < 16 ? s_.block * bits_ / 8 : 16);
    if (reinterpret_cast<uintptr_t>(inputs[1]) % load != 0) load = 8;
    if (reinterpret_cast<uintptr_t>(inputs[1]) % load != 0)
      throw std::runtime_error("MatMulNBits: the packed weight is not aligned to " +
                               std::to_string(load) + " bytes");
    if (bits_ == 4) {
      launch_zero<4>(vec, load, inputs, outputs, ctx);
    } else {
      launch_zero<8>(vec, load, inputs, outputs, ctx);
    }
    check_launch("matmul_nbits");
  }

 private:
  // rows of W dequantized per GEMM (all of them where they fit kDequantBytes)
  int64_t gemm_rows() const {
    const int64_t fit = kDequantBytes / (s_.k * static_cast<int64_t>(sizeof(float)));
    return fit >= s_.n ? s_.n : (fit < 64 ? 64 : fit);
  }

  void run_gemm(const void* const* in, void* const* out, Context& ctx) const {
    auto* w = static_cast<float*>(ctx.workspace);
    const auto* b = static_cast<const uint8_t*>(in[1]);
    const auto* scales = static_cast<const float*>(in[2]);
    const auto* bias = has_bias_ ? static_cast<const float*>(in[4]) : nullptr;
    auto* y = static_cast<float*>(out[0]);
    const int64_t step = gemm_rows();
    for (int64_t n0 = 0; n0 < s_.n; n0 += step) {
      const int64_t rows = s_.n - n0 < step ? s_.n - n0 : step;
      const int64_t threads = rows * ((s_.k + kChunk - 1) / kChunk);
      const unsigned grid = blocks_for(threads, 256);
      if (bits_ == 4) {
        dequantize<4>(grid, b, scales, in[3], w, n0, rows, ctx);
      } else {
        dequantize<8>(grid, b, scales, in[3], w, n0, rows, ctx);
      }
      check_launch("matmul_nbits dequantize");
      GemmArgs g;  // y[:, n0:n0+rows] = A @ W_rows^T (+ bias)
      g.trans_b = true;
      g.m = s_.m, g.n = rows, g.k = s_.k;
      g.a = in[0], g.lda = s_.k;
      g.b = w, g.ldb = s_.k;
      g.c = y + n0, g.ldc = s_.n;
      if (bias) {
        g.bias = bias + n0;
        ctx.blas->gemm_epilogue(g);
      } else {
        ctx.blas->gemm(g);
      }
    }
  }

  template <int BITS>
  void dequantize(unsigned grid, const uint8_t* b, const float* scales, const void* zero, float* w,
                  int64_t n0, int64_t rows, Context& ctx) const {
    switch (zero_) {
      case Zero::kNone:
        return dequantize_rows<BITS, Zero::kNone>
            <<<grid, 256, 0, ctx.stream>>>(b, scales, zero, w, s_, n0, rows);
      case Zero::kPacked:
        return dequantize_rows<BITS, Zero::kPacked>
            <<<grid, 256, 0, ctx.stream>>>(b, scales, zero, w, s_, n0, rows);
      case Zero::kFloat:
        return dequantize_rows<BITS, Zero::kFloat>
            <<<grid, 256, 0, ctx.stream>>>(b, scales, zero, w, s_, n0, rows);
    }
  }

  template <int BITS>
  void launch_zero(bool vec, int load, const void* const* in, void* const* out,
                   Context& ctx) const {
    switch (zero_) {
      case Zero::kNone: return launch_load<BITS, Zero::kNone>(vec, load, in, out, ctx);
      case Zero::kPacked: return launch_load<BITS, Zero::kPacked>(vec, load, in, out, ctx);
      case Zero::kFloat: return launch_load<BITS, Zero::kFloat>(vec, load, in, out, ctx);
    }
  }

  template <int BITS, Zero ZERO>
  void launch_load(bool vec, int load, const void* const* in, void* const* out,
                   Context& ctx) const {
    const bool gemv = s_.m == 1;
    if (load == 16) {
      return gemv ? launch<BITS, ZERO, 16, 1>(vec, in, out, ctx)
                  : launch<BITS, ZERO, 16, kTileM>(vec, in, out, ctx);
    }
    return gemv ? launch<BITS, ZERO, 8, 1>(vec, in, out, ctx)
                : launch<BITS, ZERO, 8, kTileM>(vec, in, out, ctx);
  }

  template <int BITS, Zero ZERO, int LOAD, int TILE>
  void launch(bool vec, const void* const* in, void* const* out, Context& ctx) const {
    const unsigned grid = static_cast<unsigned>((s_.n + kRows - 1) / kRows);
    const unsigned threads = static_cast<unsigned>(kWarps * warp_size_);
    const auto* a = static_cast<const float*>(in[0]);
    const auto* b = static_cast<const uint8_t*>(in[1]);
    const auto* scales = static_cast<const float*>(in[2]);
    const auto* bias = has_bias_ ? static_cast<const float*>(in[4]) : nullptr;
    auto* y = static_cast<float*>(out[0]);
    if (vec) {
      matmul_nbits<BITS, ZERO, true, LOAD, TILE>
          <<<grid, threads, 0, ctx.stream>>>(a, b, scales, in[3], bias, y, s_);
    } else {
      matmul_nbits<BITS, ZERO, false, LOAD, TILE>
          <<<grid, threads, 0, ctx.stream>>>(a, b, scales, in[3], bias, y, s_);
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
