// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// MatMulNBits (onnxruntime's com.microsoft weight-only int4 / int8 MatMul): f32 A [M, K]
// times the block-quantized weight W [N, K], transposed, plus an optional f32 bias [N].
// The weight stays packed: B u8 [N, k_blocks, blob] (codes low bits first in each byte),
// scales f32 [N * k_blocks], zero points absent (2^(bits-1)), u8 packed like the codes (one
// row of ceil(k_blocks * bits / 8) bytes per n) or f32 [N * k_blocks]. Each output sums,
// block by block, scale * sum_k (code - zero) * a[k] in float; OpenMP over N.
// targets/ref/matmul_nbits.py is the oracle.
#include <omp.h>

#include <cstdint>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 1 << 14;

class MatMulNBitsKernel : public Kernel {
 public:
  explicit MatMulNBitsKernel(const KernelSpec& spec)
      : k_(spec.attrs.get_int("K")), n_(spec.attrs.get_int("N")),
        bits_(static_cast<int>(spec.attrs.get_int("bits"))),
        block_(spec.attrs.get_int("block_size")), has_zero_(spec.has_input(3)),
        float_zero_(spec.has_input(3) && spec.inputs[3].dtype == DType::f32),
        has_bias_(spec.has_input(4)) {
    k_blocks_ = (k_ + block_ - 1) / block_;
    blob_ = block_ * bits_ / 8;
    zero_row_ = (k_blocks_ * bits_ + 7) / 8;
    m_ = spec.inputs[0].numel() / k_;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* a = static_cast<const float*>(inputs[0]);
    const uint8_t* b = static_cast<const uint8_t*>(inputs[1]);
    const float* scales = static_cast<const float*>(inputs[2]);
    const void* zero = has_zero_ ? inputs[3] : nullptr;
    const float* bias = has_bias_ ? static_cast<const float*>(inputs[4]) : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    const int64_t work = m_ * n_ * k_;
#pragma omp parallel for schedule(static) if (work > kParallelWork)
    for (int64_t n = 0; n < n_; ++n) {
      for (int64_t m = 0; m < m_; ++m) {
        float sum = row_dot(a + m * k_, b + n * k_blocks_ * blob_, scales + n * k_blocks_, zero, n);
        y[m * n_ + n] = bias ? sum + bias[n] : sum;
      }
    }
  }

 private:
  float zero_of(const void* zero, int64_t n, int64_t j) const {
    if (!zero) return static_cast<float>(1 << (bits_ - 1));
    if (float_zero_) return static_cast<const float*>(zero)[n * k_blocks_ + j];
    const uint8_t* row = static_cast<const uint8_t*>(zero) + n * zero_row_;
    if (bits_ == 8) return row[j];
    return static_cast<float>((row[j / 2] >> ((j % 2) * 4)) & 0xF);
  }

  // sum over the blocks of one weight row n: scale_j * sum_k (code_k - zero_j) * a_k
  float row_dot(const float* a, const uint8_t* codes, const float* scales, const void* zero,
                int64_t n) const {
    float total = 0.f;
    for (int64_t j = 0; j < k_blocks_; ++j) {
      const int64_t k0 = j * block_;
      const int64_t len = k0 + block_ <= k_ ? block_ : k_ - k0;
      const uint8_t* blob = codes + j * blob_;
      const float zp = zero_of(zero, n, j);
      float dot = 0.f, a_sum = 0.f;
      if (bits_ == 8) {
        for (int64_t i = 0; i < len; ++i) {
          dot += static_cast<float>(blob[i]) * a[k0 + i];
          a_sum += a[k0 + i];
        }
      } else {
        for (int64_t i = 0; i < len; ++i) {
          const int code = (blob[i / 2] >> ((i % 2) * 4)) & 0xF;
          dot += static_cast<float>(code) * a[k0 + i];
          a_sum += a[k0 + i];
        }
      }
      total += scales[j] * (dot - zp * a_sum);
    }
    return total;
  }

  int64_t k_, n_;
  int bits_;
  int64_t block_, k_blocks_ = 0, blob_ = 0, zero_row_ = 0, m_ = 0;
  bool has_zero_, float_zero_, has_bias_;
};

std::unique_ptr<Kernel> make_matmul_nbits(const KernelSpec& spec) {
  if (spec.inputs.size() < 3 || spec.inputs.size() > 5 || spec.outputs.size() != 1)
    spec_error(spec, "takes A, B, scales, zero_points? and bias?");
  const int64_t k = spec.attrs.get_int("K"), n = spec.attrs.get_int("N");
  const int64_t bits = spec.attrs.get_int("bits"), block = spec.attrs.get_int("block_size");
  if (bits != 4 && bits != 8) spec_error(spec, "bits must be 4 or 8");
  if (block < 16 || (block & (block - 1)) != 0)
    spec_error(spec, "block_size: a power of two >= 16");
  if (k < 1 || n < 1) spec_error(spec, "K and N must be positive");
  const int64_t k_blocks = (k + block - 1) / block;
  const TensorInfo& a = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  if (a.dtype != DType::f32 || y.dtype != DType::f32) spec_error(spec, "A and Y must be f32");
  if (a.rank() < 1 || a.dims[a.rank() - 1] != k) spec_error(spec, "A's last dim must be K");
  if (y.numel() != a.numel() / k * n) spec_error(spec, "Y must be [.., N]");
  if (spec.inputs[1].dtype != DType::u8 ||
      spec.inputs[1].numel() != n * k_blocks * block * bits / 8)
    spec_error(spec, "B must be u8 [N, k_blocks, block_size * bits / 8]");
  if (spec.inputs[2].dtype != DType::f32 || spec.inputs[2].numel() != n * k_blocks)
    spec_error(spec, "scales must be f32 [N * k_blocks]");
  if (spec.has_input(3)) {
    const TensorInfo& z = spec.inputs[3];
    const bool packed = z.dtype == DType::u8 && z.numel() == n * ((k_blocks * bits + 7) / 8);
    const bool floats = z.dtype == DType::f32 && z.numel() == n * k_blocks;
    if (!packed && !floats) spec_error(spec, "zero_points: packed u8 or f32 [N * k_blocks]");
  }
  if (spec.has_input(4) && (spec.inputs[4].dtype != DType::f32 || spec.inputs[4].numel() != n))
    spec_error(spec, "bias must be f32 [N]");
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.has_input(i) && !spec.inputs[i].is_contiguous())
      spec_error(spec, "plain tensors only");
  if (!y.is_contiguous()) spec_error(spec, "plain tensors only");
  return std::make_unique<MatMulNBitsKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("MatMulNBits", make_matmul_nbits);

}  // namespace graphkiln
