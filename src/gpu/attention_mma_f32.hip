// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Float32 attention on tensor cores with float32 accuracy: the scheme of attention_mma.hip
// (16 query rows a warp, everything a warp owns in registers, K and V chunks staged by
// cp.async, online softmax on the score fragments) with both products on mma.sync m16n8k8
// TF32, each split three ways ("3xTF32"): x = big + small with big = x rounded to TF32 and
// small = (x - big) rounded to TF32, and a b ~ small.big + big.small + big.big accumulated in
// float. The dropped small.small term is below float32's own rounding, so no TF32 rounding
// reaches the result: this is float32 arithmetic (not fast_math), at tensor-core speed.
//
// NVIDIA only (sm_80+), head sizes up to 64 (padded to 32 or 64; Q's split fragments stay in
// registers). Chunks of 32 keys, rows of DIM + 4 floats (conflict-free fragment reads). The
// probabilities P go into the second product straight from the score registers: an m16n8
// accumulator holds columns 2t and 2t + 1 where an m16k8 operand wants t and t + 4, so the
// keys of each 8-key step are taken in the order 0 2 4 6 1 3 5 7 on both sides (V's rows
// read to match), which leaves the sum over keys unchanged. try_flash (attention_flash.hip)
// asks for it for float32 steps at variant 0 and 5; GRAPHKILN_GPU_MMA_ATTENTION=0 turns it off.
#include "gpu/common.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "gpu/attention_flash_shape.hpp"
#include "gpu/attention_mma_tiles.hpp"
#include "gpu/kernel.hpp"

namespace graphkiln {
namespace gpu {

#if defined(__CUDACC__) && !defined(__HIP__)
namespace {

using mma_tiles::kWarpRows;
constexpr int kKeys = 32, kMaxDim = 64;

template <int DIM>
struct F32Layout {
  static constexpr int kLd = DIM + 4;
  static constexpr size_t kTile = size_t(kKeys) * kLd * 4;
  static constexpr size_t bytes = 4 * kTile;  // K0 V0 K1 V1
  static_assert(kTile % 16 == 0, "16-byte aligned tiles");
};

__device__ inline uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// x as big + small TF32 parts
__device__ inline void split(float x, uint32_t& big, uint32_t& small) {
  big = to_tf32(x);
  small = to_tf32(x - __uint_as_float(big));
}

__device__ inline void mma_tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c += a b as small.big + big.small + big.big
__device__ inline void mma3(float (&c)[4], const uint32_t (&a_big)[4], const uint32_t (&a_small)[4],
                            const float (&b)[2]) {
  uint32_t b_big[2], b_small[2];
  split(b[0], b_big[0], b_small[0]);
  split(b[1], b_big[1], b_small[1]);
  mma_tf32(c, a_small, b_big[0], b_big[1]);
  mma_tf32(c, a_big, b_small[0], b_small[1]);
  mma_tf32(c, a_big, b_big[0], b_big[1]);
}

__device__ inline float q_at(const float* q, const FlashShape& s, int64_t row, int c) {
  return row < s.q_seq && c < s.head_dim ? q[row * s.q[2] + c] : 0.f;
}

// vec: bit 1 / 2 when k / v can be staged with 16-byte copies
template <int DIM, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    mma_attention_f32(const float* __restrict__ q, const float* __restrict__ k,
                      const float* __restrict__ v, const void* __restrict__ mask,
                      float* __restrict__ y, FlashShape s, int vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // TF32 mma needs sm_80; the factory never builds this kernel there
#else
  using L = F32Layout<DIM>;
  constexpr int kRows = WARPS * kWarpRows, kFeat = DIM / 8, kKeyTiles = kKeys / 8,
                kOutTiles = DIM / 8;
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane >> 2, t = lane & 3;
  const int64_t b = blockIdx.z, h = blockIdx.y, kv_h = h / s.group;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t row_g = row0 + warp * kWarpRows + g;
  const bool active = row0 + warp * kWarpRows < s.q_seq;  // uniform across the warp
  const float* qb = q + b * s.q[0] + h * s.q[1];
  const float* kb = k + b * s.k[0] + kv_h * s.k[1];
  const float* vb = v + b * s.v[0] + kv_h * s.v[1];

  int64_t key_begin, key_end;
  mma_tiles::key_range(s, row0, kRows, kKeys, key_begin, key_end);
  auto stage = [&](int64_t key0, int buffer) {
    unsigned char* at = smem + 2 * buffer * L::kTile;
    mma_tiles::stage_rows<4, DIM, L::kLd, kKeys>(at, kb, s.k[2], key0, s.kv_seq, s.head_dim,
                                                 vec & 2);
    mma_tiles::stage_rows<4, DIM, L::kLd, kKeys>(at + L::kTile, vb, s.v[2], key0, s.kv_seq, s.v_dim,
                                                 vec & 4);
    mma_tiles::async_commit();
  };
  if (key_begin < key_end) stage(key_begin, 0);

  uint32_t q_big[kFeat][4], q_small[kFeat][4];  // Q's m16k8 fragments, features 8f ..
#pragma unroll
  for (int f = 0; f < kFeat; ++f) {
    const float x[4] = {q_at(qb, s, row_g, 8 * f + t), q_at(qb, s, row_g + 8, 8 * f + t),
                        q_at(qb, s, row_g, 8 * f + t + 4), q_at(qb, s, row_g + 8, 8 * f + t + 4)};
#pragma unroll
    for (int i = 0; i < 4; ++i) split(x[i], q_big[f][i], q_small[f][i]);
  }
  float o[kOutTiles][4];
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  mma_tiles::OnlineRows rows;

  int buffer = 0;
  for (int64_t key0 = key_begin; key0 < key_end; key0 += kKeys, buffer ^= 1) {
    if (key0 + kKeys < key_end) {
      stage(key0 + kKeys, buffer ^ 1);
      mma_tiles::async_wait<1>();
    } else {
      mma_tiles::async_wait<0>();
    }
    __syncthreads();  // this chunk is in shared memory for every warp
    if (active) {
      const float* ks = reinterpret_cast<const float*>(smem + 2 * buffer * L::kTile);
      const float* vs = ks + L::kTile / 4;
      float sc[kKeyTiles][4];
#pragma unroll
      for (int n = 0; n < kKeyTiles; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
      // S = Q K^T: B(feature t | t + 4, key g) = K[key g][feature]
#pragma unroll
      for (int f = 0; f < kFeat; ++f)
#pragma unroll
        for (int n = 0; n < kKeyTiles; ++n) {
          const float* kr = ks + (8 * n + g) * L::kLd + 8 * f + t;
          const float kf[2] = {kr[0], kr[4]};
          mma3(sc[n], q_big[f], q_small[f], kf);
        }
      float corr[2];
      rows.step(sc, s, mask, b, h, row_g, key0, t, [](float x) { return x; }, corr);
#pragma unroll
      for (int n = 0; n < kOutTiles; ++n) {
        o[n][0] *= corr[0];
        o[n][1] *= corr[0];
        o[n][2] *= corr[1];
        o[n][3] *= corr[1];
      }
      // O += P V over each 8-key step j, keys in the order 2t (operand column t) and 2t + 1
      // (column t + 4): A = (P(g, 2t), P(g + 8, 2t), P(g, 2t + 1), P(g + 8, 2t + 1))
#pragma unroll
      for (int j = 0; j < kKeyTiles; ++j) {
        uint32_t p_big[4], p_small[4];
        const float p[4] = {sc[j][0], sc[j][2], sc[j][1], sc[j][3]};
#pragma unroll
        for (int i = 0; i < 4; ++i) split(p[i], p_big[i], p_small[i]);
        const float* v0 = vs + (8 * j + 2 * t) * L::kLd + g;
#pragma unroll
        for (int n = 0; n < kOutTiles; ++n) {
          const float vf[2] = {v0[8 * n], v0[L::kLd + 8 * n]};
          mma3(o[n], p_big, p_small, vf);
        }
      }
    }
    __syncthreads();  // every warp is done with this buffer before it is staged again
  }
  if (active) mma_tiles::store_rows<float, kOutTiles>(y, s, b, h, row_g, t, o, rows);
#endif
}

template <int DIM, int WARPS>
class MmaAttentionF32 : public Kernel {
 public:
  MmaAttentionF32(const FlashShape& shape, int64_t batch)
      : s_(shape), batch_(batch), staging_(shape, 4) {}

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (batch_ == 0 || s_.heads == 0 || s_.q_seq == 0) return;
    const int vec = staging_.mask(inputs);
    constexpr int kRows = WARPS * kWarpRows;
    const dim3 grid(static_cast<unsigned>((s_.q_seq + kRows - 1) / kRows),
                    static_cast<unsigned>(s_.heads), static_cast<unsigned>(batch_));
    mma_attention_f32<DIM, WARPS><<<grid, WARPS * 32, F32Layout<DIM>::bytes, ctx.stream>>>(
        static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]),
        static_cast<const float*>(inputs[2]), inputs[3], static_cast<float*>(outputs[0]), s_, vec);
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

// The kernel with WARPS warps a block; null where the device is older than sm_80 or lacks the
// shared memory (its limit raised here, not in run(), which may be inside a graph capture)
template <int DIM, int WARPS>
std::unique_ptr<Kernel> make_warps(const FlashShape& s, int64_t batch) {
  constexpr size_t bytes = F32Layout<DIM>::bytes;
  int device = 0, major = 0, limit = 0;
  const bool fits =
      cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      major >= 8 &&
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
          cudaSuccess &&
      static_cast<size_t>(limit) >= bytes &&
      cudaFuncSetAttribute(mma_attention_f32<DIM, WARPS>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes)) == cudaSuccess;
  if (!fits) {
    (void)cudaGetLastError();  // clear it: the scalar kernel takes the step
    return nullptr;
  }
  return std::make_unique<MmaAttentionF32<DIM, WARPS>>(s, batch);
}

// 4 warps (64 query rows) a block, or 1 warp where 4-warp blocks would not give every SM two
template <int DIM>
std::unique_ptr<Kernel> make_sized(const FlashShape& s, int64_t batch) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    sms = 0;
  }
  const int64_t blocks4 = (s.q_seq + 4 * kWarpRows - 1) / (4 * kWarpRows) * s.heads * batch;
  if (blocks4 < 2 * static_cast<int64_t>(sms)) return make_warps<DIM, 1>(s, batch);
  return make_warps<DIM, 4>(s, batch);
}

}  // namespace

std::unique_ptr<Kernel> make_attention_mma_f32(const FlashShape& s, int64_t batch) {
  if (!enabled() || s.head_dim < 1 || s.v_dim < 1 || s.head_dim > kMaxDim || s.v_dim > kMaxDim)
    return nullptr;
  const int64_t widest = s.head_dim > s.v_dim ? s.head_dim : s.v_dim;
  return widest <= 32 ? make_sized<32>(s, batch) : make_sized<64>(s, batch);
}
#endif  // NVIDIA

}  // namespace gpu
}  // namespace graphkiln
