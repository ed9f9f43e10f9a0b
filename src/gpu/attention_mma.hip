// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Attention on tensor cores for float16 / bfloat16 steps: the flash scheme of
// attention_flash.hip (same step contract, same score bias, one pass over the keys with a
// running maximum and sum per row) with both products done by WMMA (m16n16k16, T inputs,
// float accumulation). NVIDIA only (sm_80+); try_flash (attention_flash.hip) picks it.
//
// A block is 4 warps on one (batch, head): 64 query rows, warp w owns rows 16w .. 16w + 15
// (1 warp, 16 rows, where 4-warp blocks would leave SMs idle).
// Head sizes are padded to DIM (32, 64, 96 or 128); features past head_dim / v_dim and keys
// past kv_seq are staged as zeros. Dynamic shared memory holds the Q tile [64][DIM] as T
// (read once into register fragments; the space then holds the scores), the K and V chunks
// [64 keys][DIM] as T, and per warp the scores S [16][64] float, the probabilities P [16][64]
// as T and the output rows O [16][DIM] float. Per chunk of 64 keys: S = Q K^T (wmma, K read
// column-major as K^T), then two lanes a row (32 keys each, interleaved): scale in float,
// biased_score, online max / sum, P rounded to T (the sum adds the rounded values), O row
// times the correction; then O += P V (wmma; O goes through shared memory, so the row
// scaling never depends on the fragment layout). At the end y = O / l, zeros for a row with
// no allowed key.
#include "gpu/common.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "gpu/attention_flash_shape.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"

#if defined(__CUDACC__) && !defined(__HIP__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#endif

namespace graphkiln {
namespace gpu {

#if defined(__CUDACC__) && !defined(__HIP__)
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarpRows = 16, kKeys = 64;
constexpr unsigned kFull = 0xffffffffu;

template <typename T>
struct MmaElement;
template <>
struct MmaElement<F16> {
  using type = __half;
  __device__ static type round(float f) { return __float2half_rn(f); }
  __device__ static float widen(type x) { return __half2float(x); }
};
template <>
struct MmaElement<BF16> {
  using type = __nv_bfloat16;
  __device__ static type round(float f) { return __float2bfloat16_rn(f); }
  __device__ static float widen(type x) { return __bfloat162float(x); }
};

// Shared memory for head sizes padded to DIM: byte offsets of the regions, each a multiple
// of 128 bytes (wmma wants 32-byte aligned tiles); row strides in elements (a multiple of 8
// for T, of 4 for float, as wmma asks), skewed against bank conflicts.
template <int DIM, int WARPS>
struct MmaLayout {
  static constexpr int kRows = WARPS * kWarpRows;
  static constexpr int kLd = DIM + 8;          // Q, K, V tiles (T)
  static constexpr int kScoreLd = kKeys + 4;   // S (float)
  static constexpr int kProbLd = kKeys + 8;    // P (T)
  static constexpr int kOutLd = DIM + 4;       // O (float)
  static constexpr size_t kTile = size_t(kKeys) * kLd * 2;  // one K or V chunk
  static constexpr size_t kScores = size_t(kRows) * kScoreLd * 4;
  static constexpr size_t kProbs = size_t(kRows) * kProbLd * 2;
  static constexpr size_t kOut = size_t(kRows) * kOutLd * 4;
  static constexpr size_t k_at = 0, v_at = kTile, s_at = 2 * kTile, p_at = s_at + kScores,
                          o_at = p_at + kProbs, bytes = o_at + kOut;
  static_assert(size_t(kRows) * kLd * 2 <= kScores, "the Q tile is staged where S goes");
  static_assert(kTile % 128 == 0 && kScores % 128 == 0 && kProbs % 128 == 0, "region alignment");
};

// Rows first .. first + ROWS - 1 of an operand (16-bit elements, row stride `stride`,
// features contiguous) into a shared [ROWS][LD] tile, the block's threads together; rows at
// or past `end` and features at or past `width` (up to DIM) become zeros. `vec`: 16-byte
// copies (width, the strides and the base are multiples of 8 elements / 16 bytes).
template <int DIM, int LD, int ROWS>
__device__ inline void stage(uint16_t* tile, const uint16_t* src, int64_t stride, int64_t first,
                             int64_t end, int64_t width, bool vec) {
  if (vec) {
    constexpr int kPieces = DIM / 8;
    for (int i = threadIdx.x; i < ROWS * kPieces; i += blockDim.x) {
      const int r = i / kPieces, c = (i % kPieces) * 8;
      const int64_t row = first + r;
      uint4 piece = make_uint4(0u, 0u, 0u, 0u);
      if (row < end && c < width) piece = *reinterpret_cast<const uint4*>(src + row * stride + c);
      *reinterpret_cast<uint4*>(tile + r * LD + c) = piece;
    }
  } else {
    for (int i = threadIdx.x; i < ROWS * DIM; i += blockDim.x) {
      const int r = i / DIM, c = i % DIM;
      const int64_t row = first + r;
      tile[r * LD + c] = (row < end && c < width) ? src[row * stride + c] : uint16_t{0};
    }
  }
}

// T: F16 or BF16. vec: bit 0 / 1 / 2 when q / k / v can be staged with 16-byte copies.
template <typename T, int DIM, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
mma_attention(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
              const void* __restrict__ mask, T* __restrict__ y, FlashShape s, int vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // bfloat16 WMMA needs sm_80; the factory never builds this kernel there
#else
  using E = MmaElement<T>;
  using W = typename E::type;
  using L = MmaLayout<DIM, WARPS>;
  constexpr int kRows = L::kRows;
  constexpr int kTiles = DIM / 16;
  extern __shared__ __align__(128) unsigned char smem[];
  uint16_t* ks = reinterpret_cast<uint16_t*>(smem + L::k_at);
  uint16_t* vs = reinterpret_cast<uint16_t*>(smem + L::v_at);
  uint16_t* qs = reinterpret_cast<uint16_t*>(smem + L::s_at);  // until the Q fragments are read
  const W* kw = reinterpret_cast<const W*>(ks);
  const W* vw = reinterpret_cast<const W*>(vs);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float* sw = reinterpret_cast<float*>(smem + L::s_at) + warp * kWarpRows * L::kScoreLd;
  W* pw = reinterpret_cast<W*>(smem + L::p_at) + warp * kWarpRows * L::kProbLd;
  float* out_all = reinterpret_cast<float*>(smem + L::o_at);
  float* ow = out_all + warp * kWarpRows * L::kOutLd;

  const int64_t b = blockIdx.z, h = blockIdx.y, kv_h = h / s.group;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t wrow0 = row0 + warp * kWarpRows;  // this warp's first row
  const bool active = wrow0 < s.q_seq;            // uniform across the warp
  const uint16_t* qb = reinterpret_cast<const uint16_t*>(q + b * s.q[0] + h * s.q[1]);
  const uint16_t* kb = reinterpret_cast<const uint16_t*>(k + b * s.k[0] + kv_h * s.k[1]);
  const uint16_t* vb = reinterpret_cast<const uint16_t*>(v + b * s.v[0] + kv_h * s.v[1]);
  const int v_tiles = static_cast<int>((s.v_dim + 15) / 16);

  stage<DIM, L::kLd, kRows>(qs, qb, s.q[2], row0, s.q_seq, s.head_dim, vec & 1);
  for (int i = threadIdx.x; i < kRows * L::kOutLd; i += blockDim.x) out_all[i] = 0.f;
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> qf[kTiles];
  if (active) {
#pragma unroll
    for (int t = 0; t < kTiles; ++t)
      wmma::load_matrix_sync(qf[t], reinterpret_cast<const W*>(qs) + warp * 16 * L::kLd + t * 16,
                             L::kLd);
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
    stage<DIM, L::kLd, kKeys>(ks, kb, s.k[2], key0, s.kv_seq, s.head_dim, vec & 2);
    stage<DIM, L::kLd, kKeys>(vs, vb, s.v[2], key0, s.kv_seq, s.v_dim, vec & 4);
    __syncthreads();
    if (!active) continue;  // the warp still joins the barriers

    // S = Q K^T: the [keys][features] K tile read column-major is K^T
    for (int n = 0; n < kKeys / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int t = 0; t < kTiles; ++t) {  // features past head_dim are zeros on both sides
        wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::col_major> kf;
        wmma::load_matrix_sync(kf, kw + n * 16 * L::kLd + t * 16, L::kLd);
        wmma::mma_sync(acc, qf[t], kf, acc);
      }
      wmma::store_matrix_sync(sw + n * 16, acc, L::kScoreLd, wmma::mem_row_major);
    }
    __syncwarp();

    // the online softmax: lanes 2r and 2r + 1 own row r (each keeps its running maximum and
    // sum), lane 2r + half scores keys 2j + half of the chunk (interleaved: fewer bank
    // conflicts), the pair combines its maxima and sums with one shuffle each
    {
      const int r = lane >> 1, half = lane & 1;
      const int64_t row = wrow0 + r;
      const float* srow = sw + r * L::kScoreLd;
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
        const W w = E::round(none ? 0.f : __expf(x[j] - m_new));  // exp(-inf) = 0
        pw[r * L::kProbLd + 2 * j + half] = w;
        chunk_sum += E::widen(w);
      }
      chunk_sum += __shfl_xor_sync(kFull, chunk_sum, 1);
      l_mine = l_mine * correction + chunk_sum;
      m_mine = m_new;
      if (correction != 1.f)
        for (int d = half; d < v_tiles * 16; d += 2) ow[r * L::kOutLd + d] *= correction;
    }
    __syncwarp();

    // O += P V
    wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> pf[kKeys / 16];
#pragma unroll
    for (int t = 0; t < kKeys / 16; ++t) wmma::load_matrix_sync(pf[t], pw + t * 16, L::kProbLd);
    for (int n = 0; n < v_tiles; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, ow + n * 16, L::kOutLd, wmma::mem_row_major);
#pragma unroll
      for (int t = 0; t < kKeys / 16; ++t) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::row_major> vf;
        wmma::load_matrix_sync(vf, vw + t * 16 * L::kLd + n * 16, L::kLd);
        wmma::mma_sync(acc, pf[t], vf, acc);
      }
      wmma::store_matrix_sync(ow + n * 16, acc, L::kOutLd, wmma::mem_row_major);
    }
  }
  if (!active) return;  // no barrier follows
  __syncwarp();         // the last O stores are visible to every lane
  for (int r = 0; r < kWarpRows; ++r) {
    const float l = __shfl_sync(kFull, l_mine, 2 * r);
    const int64_t row = wrow0 + r;
    if (row >= s.q_seq) break;  // uniform
    const float inv = l > 0.f ? 1.f / l : 0.f;  // a row with no allowed key gives zeros
    T* out = y + b * s.y[0] + h * s.y[1] + row * s.y[2];
    for (int d = lane; d < s.v_dim; d += 32) out[d] = store_float<T>(ow[r * L::kOutLd + d] * inv);
  }
#endif
}

template <typename T, int DIM, int WARPS>
class MmaAttention : public Kernel {
 public:
  MmaAttention(const FlashShape& shape, int64_t batch)
      : s_(shape),
        batch_(batch),
        staging_(shape, 8) {}

  void run(const void* const* inputs, void* const* outputs, Context& ctx) override {
    if (batch_ == 0 || s_.heads == 0 || s_.q_seq == 0) return;
    const int vec = staging_.mask(inputs);
    constexpr int kRows = MmaLayout<DIM, WARPS>::kRows;
    const dim3 grid(static_cast<unsigned>((s_.q_seq + kRows - 1) / kRows),
                    static_cast<unsigned>(s_.heads), static_cast<unsigned>(batch_));
    mma_attention<T, DIM, WARPS><<<grid, WARPS * 32, MmaLayout<DIM, WARPS>::bytes, ctx.stream>>>(
        static_cast<const T*>(inputs[0]), static_cast<const T*>(inputs[1]),
        static_cast<const T*>(inputs[2]), inputs[3], static_cast<T*>(outputs[0]), s_, vec);
    check_launch("mma_attention");
  }

 private:
  FlashShape s_;
  int64_t batch_;
  Staging16 staging_;
};

// The kernel for head sizes padded to DIM with WARPS warps a block, its shared-memory limit
// raised here (not in run(), which may be inside a graph capture); null where the device
// cannot give it.
template <typename T, int DIM, int WARPS>
std::unique_ptr<Kernel> make_warps(const FlashShape& s, int64_t batch) {
  constexpr size_t bytes = MmaLayout<DIM, WARPS>::bytes;
  int device = 0, major = 0, limit = 0;
  const bool fits =
      cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      major >= 8 &&
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
          cudaSuccess &&
      static_cast<size_t>(limit) >= bytes &&
      cudaFuncSetAttribute(mma_attention<T, DIM, WARPS>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes)) == cudaSuccess;
  if (!fits) {
    (void)cudaGetLastError();  // clear it: the scalar kernel takes the step
    return nullptr;
  }
  return std::make_unique<MmaAttention<T, DIM, WARPS>>(s, batch);
}

// 4 warps (64 query rows) a block, or 1 warp (16 rows) when 4-warp blocks would not give
// every SM two blocks (BERT at batch 1: 24 blocks of 4 warps on 132 SMs)
template <typename T, int DIM>
std::unique_ptr<Kernel> make_sized(const FlashShape& s, int64_t batch) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    sms = 0;
  }
  const int64_t blocks4 = (s.q_seq + 4 * kWarpRows - 1) / (4 * kWarpRows) * s.heads * batch;
  if (blocks4 < 2 * static_cast<int64_t>(sms)) return make_warps<T, DIM, 1>(s, batch);
  return make_warps<T, DIM, 4>(s, batch);
}

template <typename T>
std::unique_ptr<Kernel> make_typed(int64_t widest, const FlashShape& s, int64_t batch) {
  if (widest <= 32) return make_sized<T, 32>(s, batch);
  if (widest <= 64) return make_sized<T, 64>(s, batch);
  if (widest <= 96) return make_sized<T, 96>(s, batch);
  return make_sized<T, 128>(s, batch);
}

bool mma_attention_enabled() {
  const char* env = std::getenv("GRAPHKILN_GPU_MMA_ATTENTION");
  return !(env && std::strcmp(env, "0") == 0);
}

}  // namespace

std::unique_ptr<Kernel> make_attention_mma(DType dtype, const FlashShape& s, int64_t batch) {
  if (!mma_attention_enabled()) return nullptr;
  if (s.head_dim < 1 || s.v_dim < 1 || s.head_dim > 128 || s.v_dim > 128) return nullptr;
  const int64_t widest = s.head_dim > s.v_dim ? s.head_dim : s.v_dim;
  if (dtype == DType::f16) return make_typed<F16>(widest, s, batch);
  if (dtype == DType::bf16) return make_typed<BF16>(widest, s, batch);
  return nullptr;
}
#endif  // NVIDIA

}  // namespace gpu
}  // namespace graphkiln
