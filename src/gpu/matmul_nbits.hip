// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// MatMulNBits (onnxruntime's com.microsoft weight-only int4 / int8 MatMul) on the GPU, with the
// weights kept packed and dequantized in registers: f32 A [M, K] times the block-quantized W
// [N, K], transposed, plus an optional f32 bias [N]. The layout is src/cpu/matmul_nbits.cpp's:
// B u8 [N, k_blocks, blob] (codes low bits first in each byte), scales f32 [N * k_blocks],
// zero points absent (2^(bits-1)), u8 packed like the codes (one row of
// ceil(k_blocks * bits / 8) bytes per n) or f32 [N * k_blocks].
// Up to kGemmRows rows of A the register kernel of gpu/matmul_nbits_kernel.hpp runs (its
// comment says how; benchmarks/matmul_nbits_probe.cu times its block shapes). From kGemmRows
// rows of A on (a prompt's prefill), W is dequantized to float32 in the workspace, a bounded
// slice of rows at a time, and the BLAS GEMM (cuBLAS / rocBLAS, float32) multiplies: the packed
// weight stays the only copy the program keeps. targets/ref/matmul_nbits.py is the oracle.
#include "gpu/common.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "gpu/blas.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"
#include "gpu/matmul_nbits_kernel.hpp"

namespace graphkiln {
namespace gpu {

namespace {

constexpr int kTileM = 4;     // rows of A per pass over W (1 for a GEMV)
constexpr int kWarps = 4;     // warps per block, all on the same rows of W
constexpr int kTileRows = 4;  // rows of W per block for kTileM rows of A
// From this many rows of A on, W is dequantized into the workspace (kDequantBytes of it at a
// time) and multiplied by the BLAS GEMM: the register kernel passes over W once per kTileM
// rows, and a prefill's hundreds of rows make that compute-bound on CUDA cores. Measured on
// the H100 (4096 x 4096 int4): 16 rows took 210 us this way against 85 us in registers, 64
// rows 220 us against about 4 x 85.
constexpr int64_t kGemmRows = 48;
constexpr int64_t kDequantBytes = int64_t{64} << 20;

// Rows of W per block for one row of A (a GEMV): 8 where that still gives every
// multiprocessor two blocks, else 4. benchmarks/matmul_nbits_probe.cu timed 2 to 32 rows and
// 1 to 8 warps a block on the H100 (results/matmul_nbits_gpu_h100.md): 8 rows of 4 warps was
// the fastest or within 5% of it on every Llama-class shape (at 4 rows the loads of A
// outnumber those of W; at 16 too few blocks keep loads in flight).
int gemv_rows(int64_t n, int multiprocessors) {
  return (n + 7) / 8 >= 2 * static_cast<int64_t>(multiprocessors) ? 8 : 4;
}

using nbits::chunk_weights;
using nbits::kChunk;
using nbits::kMagic;
using nbits::Shape;
using nbits::Zero;
using nbits::zero_of;

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
    int device = 0;
    hipDeviceProp_t props;
    check(hipGetDevice(&device), "MatMulNBits: hipGetDevice");
    check(hipGetDeviceProperties(&props, device), "MatMulNBits: hipGetDeviceProperties");
    warp_size_ = props.warpSize;  // 64 on CDNA, 32 on RDNA / NVIDIA: kWarps whole warps a block
    gemv_rows_ = gemv_rows(s_.n, props.multiProcessorCount);
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
    if (load == 16) return launch_rows<BITS, ZERO, 16>(vec, in, out, ctx);
    return launch_rows<BITS, ZERO, 8>(vec, in, out, ctx);
  }

  template <int BITS, Zero ZERO, int LOAD>
  void launch_rows(bool vec, const void* const* in, void* const* out, Context& ctx) const {
    if (s_.m > 1) return launch<BITS, ZERO, LOAD, kTileM, kTileRows>(vec, in, out, ctx);
    if (gemv_rows_ == 8) return launch<BITS, ZERO, LOAD, 1, 8>(vec, in, out, ctx);
    return launch<BITS, ZERO, LOAD, 1, 4>(vec, in, out, ctx);
  }

  template <int BITS, Zero ZERO, int LOAD, int TILE, int ROWS>
  void launch(bool vec, const void* const* in, void* const* out, Context& ctx) const {
    const unsigned grid = static_cast<unsigned>((s_.n + ROWS - 1) / ROWS);
    const unsigned threads = static_cast<unsigned>(kWarps * warp_size_);
    const auto* a = static_cast<const float*>(in[0]);
    const auto* b = static_cast<const uint8_t*>(in[1]);
    const auto* scales = static_cast<const float*>(in[2]);
    const auto* bias = has_bias_ ? static_cast<const float*>(in[4]) : nullptr;
    auto* y = static_cast<float*>(out[0]);
    if (vec) {
      nbits::matmul_nbits<BITS, ZERO, true, LOAD, TILE, ROWS, kWarps>
          <<<grid, threads, 0, ctx.stream>>>(a, b, scales, in[3], bias, y, s_);
    } else {
      nbits::matmul_nbits<BITS, ZERO, false, LOAD, TILE, ROWS, kWarps>
          <<<grid, threads, 0, ctx.stream>>>(a, b, scales, in[3], bias, y, s_);
    }
  }

  Shape s_{};
  int warp_size_ = 32;
  int gemv_rows_ = 4;
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
