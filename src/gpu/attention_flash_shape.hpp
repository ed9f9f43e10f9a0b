// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What the fused attention kernels (attention_flash.hip: scalar float, attention_mma.hip and
// attention_mma_f32.hip: tensor cores) share: the step's shape as the kernels read it, the per-key score bias (soft
// cap, causal frontier, sliding window, mask), and the tensor-core kernel's factory.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>

#include "core/tensor.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"

namespace graphkiln {
namespace gpu {

struct FlashShape {
  int64_t heads, group, q_seq, kv_seq, head_dim, v_dim;
  int64_t q[3], k[3], v[3], y[3];  // (batch, head, row) strides in elements
  float scale, softcap;
  int causal;
  int64_t offset, left, right;
  int mask_kind;  // 0 none, 1 additive float, 2 bool (false masks the key)
  int mask_float_type;  // 0 float32, 1 float16, 2 bfloat16
  int64_t mask_len;
  int64_t mask_strides[4];  // [batch, head, row, key] (0 where broadcast)
};

__device__ inline float mask_at(const void* mask, int type, int64_t at) {
  if (type == 1) return load_float(static_cast<const F16*>(mask)[at]);
  if (type == 2) return load_float(static_cast<const BF16*>(mask)[at]);
  return static_cast<const float*>(mask)[at];
}

// Bytes of one mask element: 1 (bool), 4 (float32) or 2 (float16 / bfloat16)
__host__ __device__ inline int mask_element_bytes(const FlashShape& s) {
  return s.mask_kind == 2 ? 1 : s.mask_float_type == 0 ? 4 : 2;
}

// The score of key `key` for query row `row` (already scaled), after soft cap, window and
// mask (-inf: masked).
__device__ inline float biased_score(float score, const FlashShape& s, const void* mask, int64_t b,
                                     int64_t h, int64_t row, int64_t key) {
  if (row >= s.q_seq || key >= s.kv_seq) return -INFINITY;
  if (s.softcap > 0.f) score = s.softcap * tanhf(score / s.softcap);
  const int64_t pos = s.offset + row;
  if (s.causal && key > pos) return -INFINITY;
  if (s.left >= 0 && key < pos - s.left) return -INFINITY;
  if (s.right >= 0 && key > pos + s.right) return -INFINITY;
  if (s.mask_kind != 0) {
    if (key >= s.mask_len) return -INFINITY;
    const int64_t at = b * s.mask_strides[0] + h * s.mask_strides[1] + row * s.mask_strides[2] +
                       key * s.mask_strides[3];
    if (s.mask_kind == 1) return score + mask_at(mask, s.mask_float_type, at);
    if (!static_cast<const unsigned char*>(mask)[at]) return -INFINITY;
  }
  return score;
}

// What the tensor-core kernels may stage in 16-byte pieces of `per_piece` elements (bits of
// mask()): q, k, v (bits 1, 2, 4) where the head size and the (batch, head, row) strides are
// multiples of a piece (known when the kernel is built) and the base pointer is 16-byte
// aligned (checked per run); the mask (bit 8) where its keys are contiguous and its batch,
// head and row strides (the row's may be 0) and its base are 16-byte aligned, so that a
// 64-key chunk of a row is whole 16-byte pieces.
class Staging16 {
 public:
  Staging16(const FlashShape& s, int per_piece)
      : q_(rows(s.q, s.head_dim, per_piece)), k_(rows(s.k, s.head_dim, per_piece)),
        v_(rows(s.v, s.v_dim, per_piece)), mask_tile_(mask_tiles(s)) {}

  int mask(const void* const* inputs) const {
    return (q_ && aligned(inputs[0]) ? 1 : 0) | (k_ && aligned(inputs[1]) ? 2 : 0) |
           (v_ && aligned(inputs[2]) ? 4 : 0) |
           (mask_tile_ && inputs[3] != nullptr && aligned(inputs[3]) ? 8 : 0);
  }

 private:
  static bool rows(const int64_t* strides, int64_t dim, int per_piece) {
    return dim % per_piece == 0 && strides[0] % per_piece == 0 && strides[1] % per_piece == 0 &&
           strides[2] % per_piece == 0;
  }
  static bool mask_tiles(const FlashShape& s) {
    if (s.mask_kind == 0 || s.mask_strides[3] != 1) return false;
    const int64_t bytes = mask_element_bytes(s);
    return s.mask_strides[0] * bytes % 16 == 0 && s.mask_strides[1] * bytes % 16 == 0 &&
           s.mask_strides[2] * bytes % 16 == 0;
  }
  static bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

  bool q_, k_, v_, mask_tile_;
};

// attention_mma.hip (NVIDIA only): the tensor-core kernel for a float16 / bfloat16 step of
// this shape (inputs q, k, v, optional mask; output y); null when `dtype` is neither, a head
// size is over 128, the device lacks the shared memory, or GRAPHKILN_GPU_MMA_ATTENTION=0.
std::unique_ptr<Kernel> make_attention_mma(DType dtype, const FlashShape& s, int64_t batch);

// attention_mma_f32.hip (NVIDIA only): the float32 tensor-core kernel (three-way split
// products, float32 accuracy) for a step of this shape; null when a head size is over 64, the
// device lacks it, or GRAPHKILN_GPU_MMA_ATTENTION=0.
std::unique_ptr<Kernel> make_attention_mma_f32(const FlashShape& s, int64_t batch);

}  // namespace gpu
}  // namespace graphkiln
