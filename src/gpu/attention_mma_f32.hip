// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Float32 attention on tensor cores with float32 accuracy: the flash scheme of
// attention_mma.hip (64 query rows a block of 4 warps, 16 a warp, chunks of 64 keys, online
// softmax two lanes a row, O through shared memory) with both products split three ways
// ("3xTF32"): x = big + small with big = x rounded to TF32 and small = (x - big) rounded to
// TF32, and a b ~ small.big + big.small + big.big accumulated in float. The dropped
// small.small term is below float32's own rounding, so no TF32 rounding reaches the result:
// this is float32 arithmetic (not fast_math), at tensor-core speed.
//
// NVIDIA only (sm_80+), head sizes up to 64 (Q's split fragments stay in registers). try_flash
// (attention_flash.hip) asks for it for float32 steps at variant 0, where 4-warp blocks give
// every SM at least two (BERT-base at batch 32: 768 blocks), and at variant 5 (tuning) for any
// size; GRAPHKILN_GPU_MMA_ATTENTION=0 turns it off. Dynamic shared memory (85 KiB): K and V
// chunks [64 keys][68], then S / P / O [64 rows][68] floats; Q is staged where S goes and read
// once into register fragments.
#include "gpu/common.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "gpu/attention_flash_shape.hpp"
#include "gpu/kernel.hpp"

#if defined(__CUDACC__) && !defined(__HIP__)
#include <mma.h>
#endif

namespace graphkiln {
namespace gpu {

#if defined(__CUDACC__) && !defined(__HIP__)
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 4, kWarpRows = 16, kRows = kWarps * kWarpRows, kKeys = 64, kDim = 64;
constexpr int kLd = kDim + 4;  // every tile's row stride in floats (a multiple of 4, skewed)
constexpr size_t kTile = size_t(kRows) * kLd * 4;  // one [64][68] float tile
constexpr size_t kKAt = 0, kVAt = kTile, kSAt = 2 * kTile, kPAt = 3 * kTile, kOAt = 4 * kTile,
                 kBytes = 5 * kTile;
static_assert(kTile % 128 == 0 && kKeys == kRows, "tiles are interchangeable and aligned");
constexpr unsigned kFull = 0xffffffffu;

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragKt = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragAcc = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;

// `big` holds float values on entry; after: big = their TF32 rounding, small = the rounding
// of what is left
template <typename Frag>
__device__ inline void split(Frag& big, Frag& small) {
#pragma unroll
  for (int i = 0; i < big.num_elements; ++i) {
    const float x = big.x[i];
    const float hi = wmma::__float_to_tf32(x);
    big.x[i] = hi;
    small.x[i] = wmma::__float_to_tf32(x - hi);
  }
}

template <typename A, typename B>
__device__ inline void mma3(FragAcc& acc, const A& a_big, const A& a_small, const B& b_big,
                            const B& b_small) {
  wmma::mma_sync(acc, a_small, b_big, acc);
  wmma::mma_sync(acc, a_big, b_small, acc);
  wmma::mma_sync(acc, a_big, b_big, acc);
}

// Rows first .. first + ROWS - 1 of an operand (row stride `stride`, features contiguous) into
// a shared [ROWS][kLd] tile, the block's threads together; rows at or past `end` and features
// at or past `width` become zeros. vec: 16-byte loads (width, strides and base multiples of 4).
template <int ROWS>
__device__ inline void stage(float* tile, const float* src, int64_t stride, int64_t first,
                             int64_t end, int64_t width, bool vec) {
  if (vec) {
    constexpr int kPieces = kDim / 4;
    for (int i = threadIdx.x; i < ROWS * kPieces; i += blockDim.x) {
      const int r = i / kPieces, c = (i % kPieces) * 4;
      const int64_t row = first + r;
      float4 piece = make_float4(0.f, 0.f, 0.f, 0.f);
      if (row < end && c < width) piece = *reinterpret_cast<const float4*>(src + row * stride + c);
      *reinterpret_cast<float4*>(tile + r * kLd + c) = piece;
    }
  } else {
    for (int i = threadIdx.x; i < ROWS * kDim; i += blockDim.x) {
      const int r = i / kDim, c = i % kDim;
      const int64_t row = first + r;
      tile[r * kLd + c] = (row < end && c < width) ? src[row * stride + c] : 0.f;
    }
  }
}

// vec: bit 0 / 1 / 2 when q / k / v can be staged with 16-byte loads
__global__ void __launch_bounds__(kWarps * 32)
mma_attention_f32(const float* __restrict__ q, const float* __restrict__ k,
                  const float* __restrict__ v, const void* __restrict__ mask,
                  float* __restrict__ y, FlashShape s, int vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // TF32 WMMA needs sm_80; the factory never builds this kernel there
#else
  extern __shared__ __align__(128) unsigned char smem[];
  float* ks = reinterpret_cast<float*>(smem + kKAt);
  float* vs = reinterpret_cast<float*>(smem + kVAt);
  float* qs = reinterpret_cast<float*>(smem + kSAt);  // until the Q fragments are read
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float* sw = reinterpret_cast<float*>(smem + kSAt) + warp * kWarpRows * kLd;
  float* pw = reinterpret_cast<float*>(smem + kPAt) + warp * kWarpRows * kLd;
  float* out_all = reinterpret_cast<float*>(smem + kOAt);
  float* ow = out_all + warp * kWarpRows * kLd;

  const int64_t b = blockIdx.z, h = blockIdx.y, kv_h = h / s.group;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t wrow0 = row0 + warp * kWarpRows;  // this warp's first row
  const bool active = wrow0 < s.q_seq;            // uniform across the warp
  const float* qb = q + b * s.q[0] + h * s.q[1];
  const float* kb = k + b * s.k[0] + kv_h * s.k[1];
  const float* vb = v + b * s.v[0] + kv_h * s.v[1];
  const int v_tiles = static_cast<int>((s.v_dim + 15) / 16);

  stage<kRows>(qs, qb, s.q[2], row0, s.q_seq, s.head_dim, vec & 1);
  for (int i = threadIdx.x; i < kRows * kLd; i += blockDim.x) out_all[i] = 0.f;
  __syncthreads();
  FragA q_big[kDim / 8], q_small[kDim / 8];
  if (active) {
#pragma unroll
    for (int t = 0; t < kDim / 8; ++t) {
      wmma::load_matrix_sync(q_big[t], qs + warp * kWarpRows * kLd + t * 8, kLd);
      split(q_big[t], q_small[t]);
    }
  }
  // lanes 2r and 2r + 1 keep the running maximum and sum of row wrow0 + r
  float m_mine = -INFINITY, l_mine = 0.f;

  // causal / window limits over the whole block decide which chunks can matter at all
  int64_t key_begin = 0, key_end = s.kv_seq;
  const int64_t first_pos = s.offset + row0, last_pos = s.offset + row0 + kRows - 1;
  if (s.causal && last_pos + 1 < key_end) key_end = last_pos + 1;
  if (s.right >= 0 && last_pos + s.right + 1 < key_end) key_end = last_pos + s.right + 1;
  if (s.left >= 0 && first_pos - s.left > 0) key_begin = (first_pos - s.left) / kKeys * kKeys;

  for (int64_t key0 = key_begin; key0 < key_end; key0 += kKeys) {
    __syncthreads();  // every warp is done with the previous chunk (and the Q tile)
    stage<kKeys>(ks, kb, s.k[2], key0, s.kv_seq, s.head_dim, vec & 2);
    stage<kKeys>(vs, vb, s.v[2], key0, s.kv_seq, s.v_dim, vec & 4);
    __syncthreads();
    if (!active) continue;  // the warp still joins the barriers

    // S = Q K^T: the [keys][features] K tile read column-major is K^T
    for (int n = 0; n < kKeys / 16; ++n) {
      FragAcc acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int t = 0; t < kDim / 8; ++t) {  // features past head_dim are zeros on both sides
        FragKt k_big, k_small;
        wmma::load_matrix_sync(k_big, ks + n * 16 * kLd + t * 8, kLd);
        split(k_big, k_small);
        mma3(acc, q_big[t], q_small[t], k_big, k_small);
      }
      wmma::store_matrix_sync(sw + n * 16, acc, kLd, wmma::mem_row_major);
    }
    __syncwarp();

    // the online softmax: lanes 2r and 2r + 1 own row r, lane 2r + half takes keys 2j + half
    {
      const int r = lane >> 1, half = lane & 1;
      const int64_t row = wrow0 + r;
      const float* srow = sw + r * kLd;
      float x[kKeys / 2];
      float top = -INFINITY;
#pragma unroll
      for (int j = 0; j < kKeys / 2; ++j) {
        const int key = 2 * j + half;
        x[j] = biased_score(srow[key] * s.scale, s, mask, b, h, row, key0 + key);
        top = fmaxf(top, x[j]);
      }
      top = fmaxf(top, __shfl_xor_sync(kFull, top, 1));
      const float m_new = fmaxf(m_mine, top);
      const bool none = m_new == -INFINITY;  // nothing allowed yet for this row
      const float correction = none ? 1.f : __expf(m_mine - m_new);
      float chunk_sum = 0.f;
#pragma unroll
      for (int j = 0; j < kKeys / 2; ++j) {
        const float p = none ? 0.f : __expf(x[j] - m_new);  // exp(-inf) = 0
        pw[r * kLd + 2 * j + half] = p;
        chunk_sum += p;
      }
      chunk_sum += __shfl_xor_sync(kFull, chunk_sum, 1);
      l_mine = l_mine * correction + chunk_sum;
      m_mine = m_new;
      if (correction != 1.f)
        for (int d = half; d < v_tiles * 16; d += 2) ow[r * kLd + d] *= correction;
    }
    __syncwarp();

    // O += P V
    for (int n = 0; n < v_tiles; ++n) {
      FragAcc acc;
      wmma::load_matrix_sync(acc, ow + n * 16, kLd, wmma::mem_row_major);
#pragma unroll 2
      for (int t = 0; t < kKeys / 8; ++t) {
        FragA p_big, p_small;
        wmma::load_matrix_sync(p_big, pw + t * 8, kLd);
        split(p_big, p_small);
        FragB v_big, v_small;
        wmma::load_matrix_sync(v_big, vs + t * 8 * kLd + n * 16, kLd);
        split(v_big, v_small);
        mma3(acc, p_big, p_small, v_big, v_small);
      }
      wmma::store_matrix_sync(ow + n * 16, acc, kLd, wmma::mem_row_major);
    }
  }
  if (!active) return;  // no barrier follows
  __syncwarp();         // the last O stores are visible to every lane
  for (int r = 0; r < kWarpRows; ++r) {
    const float l = __shfl_sync(kFull, l_mine, 2 * r);
    const int64_t row = wrow0 + r;
    if (row >= s.q_seq) break;  // uniform
    const float inv = l > 0.f ? 1.f / l : 0.f;  // a row with no allowed key gives zeros
    float* out = y + b * s.y[0] + h * s.y[1] + row * s.y[2];
    for (int d = lane; d < s.v_dim; d += 32) out[d] = ow[r * kLd + d] * inv;
  }
#endif
}

class MmaAttentionF32 : public Kernel {
 public:
  MmaAttentionF32(const FlashShape& shape, int64_t batch)
      : s_(shape),
        batch_(batch),
        staging_(shape, 4) {}

  void run(const void* const* inputs, void* const* outputs, Context& ctx) override {
    if (batch_ == 0 || s_.heads == 0 || s_.q_seq == 0) return;
    const int vec = staging_.mask(inputs);
    const dim3 grid(static_cast<unsigned>((s_.q_seq + kRows - 1) / kRows),
                    static_cast<unsigned>(s_.heads), static_cast<unsigned>(batch_));
    mma_attention_f32<<<grid, kWarps * 32, kBytes, ctx.stream>>>(
        static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]),
        static_cast<const float*>(inputs[2]), inputs[3], static_cast<float*>(outputs[0]), s_,
        vec);
    check_launch("mma_attention_f32");
  }

 private:
  FlashShape s_;
  int64_t batch_;
  Staging16 staging_;
};

bool enabled() {
  const char* env = std::getenv("GRAPHKILN_GPU_MMA_ATTENTION");
  return !(env && std::strcmp(env, "0") == 0);
}

}  // namespace

std::unique_ptr<Kernel> make_attention_mma_f32(const FlashShape& s, int64_t batch, bool any_size) {
  if (!enabled() || s.head_dim < 1 || s.v_dim < 1 || s.head_dim > kDim || s.v_dim > kDim)
    return nullptr;
  int device = 0, major = 0, limit = 0, sms = 0;
  const bool fits =
      cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      major >= 8 &&
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
          cudaSuccess &&
      static_cast<size_t>(limit) >= kBytes &&
      cudaFuncSetAttribute(mma_attention_f32, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(kBytes)) == cudaSuccess;
  if (!fits) {
    (void)cudaGetLastError();  // clear it: the scalar kernel takes the step
    return nullptr;
  }
  const int64_t blocks = (s.q_seq + kRows - 1) / kRows * s.heads * batch;
  if (!any_size && blocks < 2 * static_cast<int64_t>(sms)) return nullptr;
  return std::make_unique<MmaAttentionF32>(s, batch);
}
#endif  // NVIDIA

}  // namespace gpu
}  // namespace graphkiln
