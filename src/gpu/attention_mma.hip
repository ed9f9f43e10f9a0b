// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Attention on tensor cores for float16 / bfloat16 steps: the flash scheme of
// attention_flash.hip (same step contract, same score bias, one pass over the keys with a
// running maximum and sum per row) with both products on mma.sync m16n8k16 (T inputs, float
// accumulation). NVIDIA only (sm_80+); try_flash (attention_flash.hip) picks it.
//
// A block is WARPS warps on one (batch, head), 16 query rows a warp (4 warps, or 1 where
// 4-warp blocks would leave SMs idle). Head sizes are padded to DIM (32, 64, 96 or 128);
// features past head_dim / v_dim and keys past kv_seq are zeros. Each warp keeps its
// scores, probabilities and output rows in registers (attention_mma_tiles.hpp). Shared
// memory holds the block's Q rows, staged once by cp.async with the first chunk, and two
// [64 keys][DIM + 8] K and V chunks, the next staged while the current one is multiplied,
// with the chunk's mask rows where their layout allows 16-byte copies (MaskTile). Per chunk
// of 64 keys: S = Q K^T (Q and K fragments by ldmatrix), the online softmax on the score
// fragments in float (P rounded to T, the sum adds the rounded values), O times the
// correction, then O += P V with P's fragments taken from the score registers as they are
// (the m16n8 accumulator layout is the m16k16 operand layout) and V's by transposing
// ldmatrix. At the end y = O / l, zeros for a row with no allowed key.
#include "gpu/common.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "gpu/attention_flash_shape.hpp"
#include "gpu/attention_mma_tiles.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"

#if defined(__CUDACC__) && !defined(__HIP__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace graphkiln {
namespace gpu {

#if defined(__CUDACC__) && !defined(__HIP__)
namespace {

using mma_tiles::kWarpRows;
constexpr int kKeys = 64;

template <typename T>
struct MmaElement;
template <>
struct MmaElement<F16> {
  // two floats as the packed pair (lower column in the low half)
  __device__ static uint32_t pack(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  __device__ static float round(float f) { return __half2float(__float2half_rn(f)); }
  __device__ static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <>
struct MmaElement<BF16> {
  __device__ static uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  __device__ static float round(float f) { return __bfloat162float(__float2bfloat16_rn(f)); }
  __device__ static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// Shared memory for head sizes padded to DIM and blocks of ROWS query rows: K and V chunks
// twice over and the Q rows, rows of DIM + 8 16-bit elements (16-byte aligned rows for
// ldmatrix, and 8 rows cover all 32 banks); then, where the mask is staged, its tile of the
// chunk twice over (MaskTile).
template <int DIM, int ROWS>
struct MmaLayout {
  static constexpr int kLd = DIM + 8;
  static constexpr size_t kTile = size_t(kKeys) * kLd * 2;
  static constexpr size_t kQ = 4 * kTile;  // after K0 V0 K1 V1
  static constexpr size_t kMask = kQ + size_t(ROWS) * kLd * 2;
  static_assert(kTile % 16 == 0 && kMask % 16 == 0, "16-byte aligned tiles");
};

// A 64-key chunk of the mask for a block's rows in shared memory: one row where every query
// row shares it (row stride 0: BERT's key padding as [B, 1, 1, S]), else one a query row
// ([B, 1, S, S] as transformers exports it). Rows of 64 elements and 16 bytes more, so that
// the 8 rows of a warp's lanes fall in different banks.
struct MaskTile {
  int rows, pitch;  // pitch: bytes from one row to the next
  __host__ __device__ MaskTile(const FlashShape& s, int block_rows)
      : rows(s.mask_strides[2] == 0 ? 1 : block_rows), pitch(kKeys * mask_element_bytes(s) + 16) {}
  __host__ __device__ size_t bytes() const { return size_t(rows) * pitch; }
};

// Keys key0 .. key0 + 63 of the mask rows of (b, h) for query rows row0 .. into `tile`, by the
// block's threads in 16-byte asynchronous copies (query rows past q_seq and keys past
// mask_len are zeros and never read from global memory; the caller commits and waits)
__device__ inline void stage_mask_tile(unsigned char* tile, const MaskTile& m, const void* mask,
                                       const FlashShape& s, int64_t b, int64_t h, int64_t row0,
                                       int64_t key0) {
  const int bytes = mask_element_bytes(s), per_row = kKeys * bytes / 16;
  const unsigned char* base = static_cast<const unsigned char*>(mask) +
                              (b * s.mask_strides[0] + h * s.mask_strides[1]) * bytes;
  for (int i = threadIdx.x; i < m.rows * per_row; i += blockDim.x) {
    const int r = i / per_row, piece = i % per_row;
    const int64_t row = row0 + r, first = key0 + piece * (16 / bytes);
    const int64_t left = row < s.q_seq ? (s.mask_len - first) * bytes : 0;
    const int take = left >= 16 ? 16 : left > 0 ? static_cast<int>(left) : 0;
    const unsigned char* from = base + (row * s.mask_strides[2] + first) * bytes;
    mma_tiles::copy16_async(tile + r * m.pitch + 16 * piece, take > 0 ? from : base, take);
  }
}

// T: F16 or BF16. vec: bit 1 / 2 / 4 when q / k / v can be staged with 16-byte copies, 8 when
// the mask's chunks are staged with K and V (Staging16, and room for them: MmaAttention).
// Registers: at most 128 a thread for head sizes up to 64 (4 blocks of 4 warps a
// multiprocessor, where shared memory allows it).
template <typename T, int DIM, int WARPS>
__global__ void __launch_bounds__(WARPS * 32, (DIM <= 64 ? 4 : 2) * (4 / WARPS))
    mma_attention(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                  const void* __restrict__ mask, T* __restrict__ y, FlashShape s, int vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // bfloat16 mma needs sm_80; the factory never builds this kernel there
#else
  using E = MmaElement<T>;
  constexpr int kRows = WARPS * kWarpRows, kFeat = DIM / 16, kKeyTiles = kKeys / 8,
                kOutTiles = DIM / 8;
  using L = MmaLayout<DIM, kRows>;
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane >> 2, t = lane & 3;
  const int64_t b = blockIdx.z, h = blockIdx.y, kv_h = h / s.group;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t row_g = row0 + warp * kWarpRows + g;       // this lane's first row
  const bool active = row0 + warp * kWarpRows < s.q_seq;  // uniform across the warp
  const T* qb = q + b * s.q[0] + h * s.q[1];
  const T* kb = k + b * s.k[0] + kv_h * s.k[1];
  const T* vb = v + b * s.v[0] + kv_h * s.v[1];
  const bool mask_staged = (vec & 8) != 0;
  const MaskTile mask_tile(s, kRows);

  int64_t key_begin, key_end;
  mma_tiles::key_range(s, row0, kRows, kKeys, key_begin, key_end);
  auto stage = [&](int64_t key0, int buffer) {
    unsigned char* at = smem + 2 * buffer * L::kTile;
    mma_tiles::stage_rows<2, DIM, L::kLd, kKeys>(at, kb, s.k[2], key0, s.kv_seq, s.head_dim,
                                                 vec & 2);
    mma_tiles::stage_rows<2, DIM, L::kLd, kKeys>(at + L::kTile, vb, s.v[2], key0, s.kv_seq, s.v_dim,
                                                 vec & 4);
    if (mask_staged)
      stage_mask_tile(smem + L::kMask + buffer * mask_tile.bytes(), mask_tile, mask, s, b, h, row0,
                      key0);
    mma_tiles::async_commit();
  };
  if (key_begin < key_end) {
    // the block's Q rows (zeros past q_seq and head_dim) go with the first chunk
    mma_tiles::stage_rows<2, DIM, L::kLd, kRows>(smem + L::kQ, qb, s.q[2], row0, s.q_seq,
                                                 s.head_dim, vec & 1);
    stage(key_begin, 0);
  }

  float o[kOutTiles][4];
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  mma_tiles::OnlineRows rows;
  // ldmatrix: lane gives row (lane & 7) of matrix lane >> 3
  const int mat = lane >> 3, mrow = lane & 7;
  // this lane's row address in the Q tile: matrices rows 0-7 / 8-15 x features 0-7 / 8-15
  const uint16_t* qs = reinterpret_cast<const uint16_t*>(smem + L::kQ) +
                       (warp * kWarpRows + mrow + ((mat & 1) << 3)) * L::kLd + ((mat >> 1) << 3);

  int buffer = 0;
  for (int64_t key0 = key_begin; key0 < key_end; key0 += kKeys, buffer ^= 1) {
    if (key0 + kKeys < key_end) {
      stage(key0 + kKeys, buffer ^ 1);
      mma_tiles::async_wait<1>();
    } else {
      mma_tiles::async_wait<0>();
    }
    __syncthreads();  // this chunk (and Q) is in shared memory for every warp
    if (active) {
      const uint16_t* ks = reinterpret_cast<const uint16_t*>(smem + 2 * buffer * L::kTile);
      const uint16_t* vs = ks + L::kTile / 2;
      float sc[kKeyTiles][4];
#pragma unroll
      for (int n = 0; n < kKeyTiles; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
      // S = Q K^T; K matrices: keys 16p + (0 | 8) x features 16f + (0 | 8)
#pragma unroll
      for (int f = 0; f < kFeat; ++f) {
        uint32_t qa[4];  // Q's m16k16 fragment, features 16f ..
        mma_tiles::load_matrices<false>(qa, qs + 16 * f);
#pragma unroll
        for (int p = 0; p < kKeys / 16; ++p) {
          uint32_t kf[4];
          mma_tiles::load_matrices<false>(
              kf, ks + (16 * p + mrow + ((mat >> 1) << 3)) * L::kLd + 16 * f + ((mat & 1) << 3));
          E::mma(sc[2 * p], qa, kf[0], kf[1]);
          E::mma(sc[2 * p + 1], qa, kf[2], kf[3]);
        }
      }
      float corr[2];
      // the lane's row g of the staged tile, and the bytes on to row g + 8
      const int tile_row = mask_tile.rows == 1 ? 0 : warp * kWarpRows + g;
      rows.step(
          sc, s, mask, b, h, row_g, key0, t, [](float x) { return E::round(x); }, corr,
          mask_staged ? smem + L::kMask + buffer * mask_tile.bytes() + tile_row * mask_tile.pitch
                      : nullptr,
          mask_tile.rows == 1 ? 0 : 8 * mask_tile.pitch);
#pragma unroll
      for (int n = 0; n < kOutTiles; ++n) {
        o[n][0] *= corr[0];
        o[n][1] *= corr[0];
        o[n][2] *= corr[1];
        o[n][3] *= corr[1];
      }
      // O += P V; matrices (transposed): keys 16c + (0 | 8) x features 16p + (0 | 8)
#pragma unroll
      for (int c = 0; c < kKeys / 16; ++c) {
        const uint32_t pa[4] = {E::pack(sc[2 * c][0], sc[2 * c][1]),
                                E::pack(sc[2 * c][2], sc[2 * c][3]),
                                E::pack(sc[2 * c + 1][0], sc[2 * c + 1][1]),
                                E::pack(sc[2 * c + 1][2], sc[2 * c + 1][3])};
#pragma unroll
        for (int p = 0; p < DIM / 16; ++p) {
          uint32_t vf[4];
          mma_tiles::load_matrices<true>(
              vf, vs + (16 * c + mrow + ((mat & 1) << 3)) * L::kLd + 16 * p + ((mat >> 1) << 3));
          E::mma(o[2 * p], pa, vf[0], vf[1]);
          E::mma(o[2 * p + 1], pa, vf[2], vf[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this buffer before it is staged again
  }
  if (active) mma_tiles::store_rows<T, kOutTiles>(y, s, b, h, row_g, t, o, rows);
#endif
}

template <typename T, int DIM, int WARPS>
class MmaAttention : public Kernel {
 public:
  static constexpr int kRows = WARPS * kWarpRows;
  using L = MmaLayout<DIM, kRows>;

  // `room`: the shared memory a block may take (the kernel's limit as the factory set it)
  MmaAttention(const FlashShape& shape, int64_t batch, size_t room)
      : s_(shape), batch_(batch), staging_(shape, 8),
        mask_fits_(L::kMask + 2 * MaskTile(shape, kRows).bytes() <= room) {}

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (batch_ == 0 || s_.heads == 0 || s_.q_seq == 0) return;
    int vec = staging_.mask(inputs);
    if (!mask_fits_) vec &= ~8;
    const size_t bytes = L::kMask + ((vec & 8) ? 2 * MaskTile(s_, kRows).bytes() : 0);
    const dim3 grid(static_cast<unsigned>((s_.q_seq + kRows - 1) / kRows),
                    static_cast<unsigned>(s_.heads), static_cast<unsigned>(batch_));
    mma_attention<T, DIM, WARPS><<<grid, WARPS * 32, bytes, ctx.stream>>>(
        static_cast<const T*>(inputs[0]), static_cast<const T*>(inputs[1]),
        static_cast<const T*>(inputs[2]), inputs[3], static_cast<T*>(outputs[0]), s_, vec);
    check_launch("mma_attention");
  }

 private:
  FlashShape s_;
  int64_t batch_;
  Staging16 staging_;
  bool mask_fits_;
};

// The kernel for head sizes padded to DIM with WARPS warps a block, its shared-memory limit
// raised here (not in run(), which may be inside a graph capture) to the most any step can
// ask (the largest mask tile staged) or, below that, what the device gives; null where that
// does not hold K, V and Q.
template <typename T, int DIM, int WARPS>
std::unique_ptr<Kernel> make_warps(const FlashShape& s, int64_t batch) {
  constexpr int kRows = WARPS * kWarpRows;
  constexpr size_t base = MmaLayout<DIM, kRows>::kMask;
  constexpr size_t most = base + 2 * size_t(kRows) * (kKeys * 4 + 16);  // float32 rows
  int device = 0, major = 0, limit = 0;
  const bool known =
      cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
          cudaSuccess;
  const size_t room = known && static_cast<size_t>(limit) < most ? limit : most;
  const bool fits = known && major >= 8 && room >= base &&
                    cudaFuncSetAttribute(mma_attention<T, DIM, WARPS>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(room)) == cudaSuccess;
  if (!fits) {
    (void)cudaGetLastError();  // clear it: the scalar kernel takes the step
    return nullptr;
  }
  return std::make_unique<MmaAttention<T, DIM, WARPS>>(s, batch, room);
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
