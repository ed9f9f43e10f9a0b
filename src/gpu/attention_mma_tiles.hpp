// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What the two tensor-core attention kernels (attention_mma.hip: float16 / bfloat16 with
// m16n8k16 products, attention_mma_f32.hip: float32 as three TF32 m16n8k8 products) share.
// NVIDIA only (sm_80+: mma.sync, ldmatrix, cp.async).
//
// Both keep everything a warp owns in registers, as the mma.sync fragments lay it out: a warp
// has 16 query rows; lane = 4 g + t holds rows g and g + 8, and of every 8-column tile of a
// score or output accumulator the columns 2t and 2t + 1 (values c0 c1 of row g, c2 c3 of row
// g + 8). The operands go through shared memory, staged by the whole block with cp.async
// (the K and V chunks, the next while the current one is multiplied; the float16 kernel also
// Q and the mask's chunks).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "gpu/attention_flash_shape.hpp"
#include "gpu/common.hpp"
#include "gpu/half.hpp"

#if defined(__CUDACC__) && !defined(__HIP__)
namespace graphkiln {
namespace gpu {
namespace mma_tiles {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarpRows = 16;

__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared without passing through registers; `bytes` < 16 fills the
// rest with zeros (0: all zeros, nothing read)
__device__ inline void copy16_async(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(bytes));
}
__device__ inline void async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ inline void async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// Four 8x8 16-bit matrices from shared memory: lanes 8i .. 8i + 7 give the row addresses of
// matrix i; `trans` hands each lane the transposed matrix's fragment.
template <bool TRANS>
__device__ inline void load_matrices(uint32_t (&r)[4], const void* row) {
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}

// Rows first .. first + ROWS - 1 of an operand (row stride `stride` elements, features
// contiguous) into a shared [ROWS][LD] tile of ELEM-byte elements, the block's threads
// together. Rows at or past `end` and features at or past `width` (up to DIM) become zeros.
// `vec`: 16-byte asynchronous copies (width, stride and base multiples of 16 bytes; the caller
// commits and waits), else element by element now.
template <int ELEM, int DIM, int LD, int ROWS>
__device__ inline void stage_rows(void* tile, const void* src, int64_t stride, int64_t first,
                                  int64_t end, int64_t width, bool vec) {
  if (vec) {
    constexpr int kPer = 16 / ELEM, kPieces = DIM / kPer;
    for (int i = threadIdx.x; i < ROWS * kPieces; i += blockDim.x) {
      const int r = i / kPieces, c = (i % kPieces) * kPer;
      const int64_t row = first + r;
      const bool inside = row < end && c < width;
      const char* from = static_cast<const char*>(src) + (inside ? (row * stride + c) * ELEM : 0);
      copy16_async(static_cast<char*>(tile) + (r * LD + c) * ELEM, from, inside ? 16 : 0);
    }
  } else {
    using Word = typename std::conditional<ELEM == 2, uint16_t, uint32_t>::type;
    const Word* from = static_cast<const Word*>(src);
    Word* to = static_cast<Word*>(tile);
    for (int i = threadIdx.x; i < ROWS * DIM; i += blockDim.x) {
      const int r = i / DIM, c = i % DIM;
      const int64_t row = first + r;
      to[r * LD + c] = (row < end && c < width) ? from[row * stride + c] : Word{0};
    }
  }
}

// The keys [begin, end) the block's rows row0 .. row0 + rows - 1 can see at all (causal
// frontier and window), begin rounded down to a chunk of `keys`.
__device__ inline void key_range(const FlashShape& s, int64_t row0, int rows, int keys,
                                 int64_t& begin, int64_t& end) {
  begin = 0;
  end = s.kv_seq;
  const int64_t first_pos = s.offset + row0, last_pos = s.offset + row0 + rows - 1;
  if (s.causal && last_pos + 1 < end) end = last_pos + 1;
  if (s.right >= 0 && last_pos + s.right + 1 < end) end = last_pos + s.right + 1;
  if (s.left >= 0 && first_pos - s.left > 0) begin = (first_pos - s.left) / keys * keys;
}

// A warp's running maximum and sum of its lane's two rows (g and g + 8; the sum is this lane's
// share, added over the four lanes of a row at the end).
struct OnlineRows {
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.f, 0.f};

  // One chunk of NT 8-key score tiles (keys key0 ..): scale, bias (biased_score; where the
  // chunk needs neither soft cap, causal frontier, window nor an edge check, only the mask
  // row's values are read: from shared memory where the kernel staged the chunk's mask rows,
  // `staged` the lane's row g and `staged_row8` the bytes on to its row g + 8, else from
  // global memory), then the scores become the probabilities exp(x - max), rounded by
  // `round` (to the type P is multiplied in; the sum adds the rounded values); corr[i]
  // rescales row i's output so far.
  template <int NT, typename Round>
  __device__ void step(float (&sc)[NT][4], const FlashShape& s, const void* mask, int64_t b,
                       int64_t h, int64_t row_g, int64_t key0, int t, Round round, float (&corr)[2],
                       const unsigned char* staged = nullptr, int staged_row8 = 0) {
    const bool plain = s.softcap <= 0.f && !s.causal && s.left < 0 && s.right < 0 &&
                       key0 + 8 * NT <= s.kv_seq &&
                       (s.mask_kind == 0 || key0 + 8 * NT <= s.mask_len);
    const bool from_staged = plain && staged != nullptr && s.mask_kind != 0;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int64_t row = row_g + 8 * i;
      if (from_staged && row < s.q_seq) staged_bias(sc, s, staged + i * staged_row8, i, t);
      else if (plain && row < s.q_seq)
        plain_bias(sc, s, mask,
                   s.mask_strides[0] * b + s.mask_strides[1] * h + s.mask_strides[2] * row +
                       s.mask_strides[3] * key0,
                   i, t);
      else
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = sc[n][2 * i + e];
            x = biased_score(x * s.scale, s, mask, b, h, row, key0 + 8 * n + 2 * t + e);
          }
      float top = -INFINITY;
#pragma unroll
      for (int n = 0; n < NT; ++n) top = fmaxf(top, fmaxf(sc[n][2 * i], sc[n][2 * i + 1]));
      top = fmaxf(top, __shfl_xor_sync(kFull, top, 1));
      top = fmaxf(top, __shfl_xor_sync(kFull, top, 2));
      const float m_new = fmaxf(m[i], top);
      const bool none = m_new == -INFINITY;  // nothing allowed yet for this row
      corr[i] = none ? 1.f : __expf(m[i] - m_new);
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = sc[n][2 * i + e];
          x = none ? 0.f : round(__expf(x - m_new));  // exp(-inf) = 0
          sum += x;
        }
      l[i] = l[i] * corr[i] + sum;
      m[i] = m_new;
    }
  }

 private:
  // Row i's scores times the scale plus its staged 64-key chunk of the mask (`staged`)
  template <int NT>
  __device__ static void staged_bias(float (&sc)[NT][4], const FlashShape& s,
                                     const unsigned char* staged, int i, int t) {
    if (s.mask_kind == 2)
      add_bias(sc, s.scale, i,
               [&](int n, int e) { return staged[8 * n + 2 * t + e] ? 0.f : -INFINITY; });
    else if (s.mask_float_type == 0)
      add_bias(sc, s.scale, i, [&](int n, int e) {
        const float2 pair = reinterpret_cast<const float2*>(staged)[4 * n + t];
        return e ? pair.y : pair.x;
      });
    else if (s.mask_float_type == 1)
      add_bias(sc, s.scale, i, [&](int n, int e) {
        return load_float(reinterpret_cast<const F16*>(staged)[8 * n + 2 * t + e]);
      });
    else
      add_bias(sc, s.scale, i, [&](int n, int e) {
        return load_float(reinterpret_cast<const BF16*>(staged)[8 * n + 2 * t + e]);
      });
  }

  // Row i's scores times the scale plus the mask (`at`: the mask element of the row's key
  // key0), as biased_score gives them inside the sequence with no cap, frontier or window.
  template <int NT>
  __device__ static void plain_bias(float (&sc)[NT][4], const FlashShape& s, const void* mask,
                                    int64_t at, int i, int t) {
    const int64_t step = s.mask_strides[3];
    if (s.mask_kind == 0) add_bias(sc, s.scale, i, [](int, int) { return 0.f; });
    else if (s.mask_kind == 2)
      add_bias(sc, s.scale, i, [&](int n, int e) {
        return static_cast<const unsigned char*>(mask)[at + (8 * n + e + 2 * t) * step] ? 0.f
                                                                                        : -INFINITY;
      });
    else if (s.mask_float_type == 0)
      add_bias(sc, s.scale, i, [&](int n, int e) {
        return static_cast<const float*>(mask)[at + (8 * n + e + 2 * t) * step];
      });
    else
      add_bias(sc, s.scale, i, [&](int n, int e) {
        return mask_at(mask, s.mask_float_type, at + (8 * n + e + 2 * t) * step);
      });
  }

  // x = x * scale + bias(n, e) for row i's scores (tile n, column 2t + e)
  template <int NT, typename Bias>
  __device__ static void add_bias(float (&sc)[NT][4], float scale, int i, Bias bias) {
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) sc[n][2 * i + e] = sc[n][2 * i + e] * scale + bias(n, e);
  }
};

// y = O / l for the lane's rows and columns of NT 8-column output tiles (zeros for a row with
// no allowed key).
template <typename T, int NT>
__device__ inline void store_rows(T* y, const FlashShape& s, int64_t b, int64_t h, int64_t row_g,
                                  int t, const float (&o)[NT][4], const OnlineRows& rows) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float l = rows.l[i];
    l += __shfl_xor_sync(kFull, l, 1);
    l += __shfl_xor_sync(kFull, l, 2);
    const int64_t row = row_g + 8 * i;
    if (row >= s.q_seq) continue;
    const float inv = l > 0.f ? 1.f / l : 0.f;
    T* out = y + b * s.y[0] + h * s.y[1] + row * s.y[2];
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int d = 8 * n + 2 * t + e;
        if (d < s.v_dim) out[d] = store_float<T>(o[n][2 * i + e] * inv);
      }
  }
}

}  // namespace mma_tiles
}  // namespace gpu
}  // namespace graphkiln
#endif  // NVIDIA
