// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Attention as one fused kernel (flash-style): scores, mask, softmax and P V for a tile of
// query rows in one pass over the keys, with a running maximum and sum per row, so the
// [rows, keys] score matrix never reaches memory. Same step contract as attention.hip (the
// lowering's "Attention" step: batch / heads / kv_heads / q_seq / kv_seq / head_dim / v_dim,
// (batch, head, row) strides with contiguous features, scale, soft cap, causal frontier,
// sliding window, optional float or bool mask); steps that ask for the scores as a second
// output, or head sizes over kMaxDim, go to attention.hip instead.
//
// A block holds 4 or 8 warps on one (batch, head); each warp owns 4 query rows. Keys go by
// in chunks of 32, staged in shared memory as float: lane j scores key j against the warp's
// 4 rows at once, the warp reduces each row's chunk maximum and sum with shuffles, and each
// lane accumulates its slice (features lane, lane + 32, ...) of P V in float registers.
// NVIDIA only (32-lane warps and the *_sync shuffles); AMD builds and GRAPHKILN_GPU_FLASH=0
// use attention.hip. float16 / bfloat16 steps go to attention_mma.hip (tensor cores), large
// float32 ones to attention_mma_f32.hip, unless the tuning variant asks for this kernel
// (try_flash).
#include "gpu/common.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "gpu/attention_flash_shape.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

#if defined(__CUDACC__) && !defined(__HIP__)
namespace {

constexpr int kRowsPerWarp = 4, kChunk = 32, kMaxDim = 128;

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// SLICE: features per lane (head_dim and v_dim <= 32 * SLICE); WARPS warps a block, each
// owning kRowsPerWarp query rows that it scores together (one K load feeds every row).
template <typename T, int SLICE, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    flash_attention(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                    const void* __restrict__ mask, T* __restrict__ y, FlashShape s) {
  constexpr int kDim = 32 * SLICE, kRows = WARPS * kRowsPerWarp;
  __shared__ float ks[kChunk][kDim + 1];  // +1: lane j reads row j without bank conflicts
  __shared__ float vs[kChunk][kDim];
  __shared__ __align__(16) float qs[kRows][kDim];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t b = blockIdx.z, h = blockIdx.y, kv_h = h / s.group;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t wrow0 = row0 + warp * kRowsPerWarp;  // this warp's first row
  const T* qb = q + b * s.q[0] + h * s.q[1];
  const T* kb = k + b * s.k[0] + kv_h * s.k[1];
  const T* vb = v + b * s.v[0] + kv_h * s.v[1];

  for (int i = threadIdx.x; i < kRows * kDim; i += blockDim.x) {
    const int r = i / kDim, d = i % kDim;
    const int64_t row = row0 + r;
    qs[r][d] = (row < s.q_seq && d < s.head_dim) ? load_float(qb[row * s.q[2] + d]) * s.scale : 0.f;
  }
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][SLICE];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int e = 0; e < SLICE; ++e) acc[r][e] = 0.f;
  }
  // causal / window limits over the whole block decide which chunks can matter at all
  int64_t key_end = s.kv_seq;
  const int64_t last_pos = s.offset + row0 + kRows - 1;
  if (s.causal && last_pos + 1 < key_end) key_end = last_pos + 1;
  if (s.right >= 0 && last_pos + s.right + 1 < key_end) key_end = last_pos + s.right + 1;
  const float* qw = &qs[warp * kRowsPerWarp][0];
  for (int64_t key0 = 0; key0 < key_end; key0 += kChunk) {
    __syncthreads();  // the previous chunk is consumed (and qs written, the first time)
    for (int i = threadIdx.x; i < kChunk * kDim; i += blockDim.x) {
      const int j = i / kDim, d = i % kDim;
      const int64_t key = key0 + j;
      const bool in = key < s.kv_seq;
      ks[j][d] = (in && d < s.head_dim) ? load_float(kb[key * s.k[2] + d]) : 0.f;
      vs[j][d] = (in && d < s.v_dim) ? load_float(vb[key * s.v[2] + d]) : 0.f;
    }
    __syncthreads();
    if (wrow0 >= s.q_seq) continue;  // uniform across the warp (it still joins the barriers)
    // lane j scores key key0 + j against the warp's rows
    float score[kRowsPerWarp] = {};
    for (int d = 0; d < kDim; d += 4) {
      const float k0 = ks[lane][d], k1 = ks[lane][d + 1], k2 = ks[lane][d + 2],
                  k3 = ks[lane][d + 3];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 qv = *reinterpret_cast<const float4*>(qw + r * kDim + d);
        score[r] += qv.x * k0 + qv.y * k1 + qv.z * k2 + qv.w * k3;
      }
    }
    const int64_t key = key0 + lane;
    float p[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float biased = biased_score(score[r], s, mask, b, h, wrow0 + r, key);
      const float m_new = fmaxf(m[r], warp_max(biased));
      if (m_new == -INFINITY) {  // nothing allowed yet for this row (uniform across the warp)
        p[r] = 0.f;
        continue;
      }
      p[r] = __expf(biased - m_new);  // exp(-inf) = 0
      const float correction = __expf(m[r] - m_new);
      l[r] = l[r] * correction + warp_sum(p[r]);
      m[r] = m_new;
#pragma unroll
      for (int e = 0; e < SLICE; ++e) acc[r][e] *= correction;
    }
    for (int j = 0; j < kChunk; ++j) {
      float vj[SLICE];
#pragma unroll
      for (int e = 0; e < SLICE; ++e) vj[e] = vs[j][lane + 32 * e];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float pj = __shfl_sync(0xffffffffu, p[r], j);
#pragma unroll
        for (int e = 0; e < SLICE; ++e) acc[r][e] += pj * vj[e];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t row = wrow0 + r;
    if (row >= s.q_seq) break;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;  // a row with no allowed key gives zeros
    T* out = y + b * s.y[0] + h * s.y[1] + row * s.y[2];
#pragma unroll
    for (int e = 0; e < SLICE; ++e) {
      const int d = lane + 32 * e;
      if (d < s.v_dim) out[d] = store_float<T>(acc[r][e] * inv);
    }
  }
}

class FlashAttention : public Kernel {
 public:
  // warps: 4 or 8 a block (0: 8 where head sizes <= 64, else 4)
  FlashAttention(const KernelSpec& spec, const FlashShape& shape, int64_t batch, int warps)
      : dtype_(spec.inputs.at(0).dtype), s_(shape), batch_(batch), warps_(warps) {}

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (batch_ == 0 || s_.heads == 0 || s_.q_seq == 0) return;
    dispatch_float(dtype_, [&](auto t) {
      using T = decltype(t);
      const bool four = warps_ == 4;
      if (s_.head_dim <= 32 && s_.v_dim <= 32) {
        if (four) launch<T, 1, 4>(inputs, outputs, ctx);
        else launch<T, 1, 8>(inputs, outputs, ctx);
      } else if (s_.head_dim <= 64 && s_.v_dim <= 64) {
        if (four) launch<T, 2, 4>(inputs, outputs, ctx);
        else launch<T, 2, 8>(inputs, outputs, ctx);
      } else {
        launch<T, 4, 4>(inputs, outputs, ctx);  // 8 warps would pass 48 KiB of shared memory
      }
    });
  }

 private:
  template <typename T, int SLICE, int kWarps>
  void launch(const void* const* inputs, void* const* outputs, Context& ctx) const {
    constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;
    const dim3 grid(static_cast<unsigned>((s_.q_seq + kRowsPerBlock - 1) / kRowsPerBlock),
                    static_cast<unsigned>(s_.heads), static_cast<unsigned>(batch_));
    flash_attention<T, SLICE, kWarps><<<grid, kWarps * 32, 0, ctx.stream>>>(
        static_cast<const T*>(inputs[0]), static_cast<const T*>(inputs[1]),
        static_cast<const T*>(inputs[2]), inputs[3], static_cast<T*>(outputs[0]), s_);
    check_launch("flash_attention");
  }

  DType dtype_;
  FlashShape s_;
  int64_t batch_;
  int warps_;
};

// The fused kernel when the step fits it; else null (attention.hip takes the step).
// attrs "variant" (graphkiln.tuning.gpu): 0 heuristic (tensor cores: attention_mma.hip for
// float16 / bfloat16, the three-way split attention_mma_f32.hip for float32 head sizes up to
// 64, else the scalar kernel with 8 warps), 1 scalar fused with 4 warps a block, 2 scalar
// fused with 8 warps, 3 unfused, 4 half-precision tensor cores (a float32 step gets 8 scalar
// warps), 5 tensor cores as 0.
std::unique_ptr<Kernel> try_flash(const KernelSpec& spec) {
  const Attrs& a = spec.attrs;
  const int64_t variant = a.get_int("variant", 0);
  if (variant == 3) return nullptr;
  if (spec.outputs.size() != 1) return nullptr;  // the scores are asked for: unfused
  const DType dtype = spec.inputs.at(0).dtype;
  if (!is_float_type(dtype)) return nullptr;
  for (int i = 1; i < 3; ++i)
    if (spec.inputs.at(i).dtype != dtype) return nullptr;
  if (spec.outputs[0].dtype != dtype) return nullptr;
  FlashShape s{};
  const int64_t batch = a.get_int("batch");
  s.heads = a.get_int("heads");
  const int64_t kv_heads = a.get_int("kv_heads", s.heads);
  if (kv_heads <= 0 || s.heads % kv_heads) return nullptr;
  s.group = s.heads / kv_heads;
  s.q_seq = a.get_int("q_seq");
  s.kv_seq = a.get_int("kv_seq");
  s.head_dim = a.get_int("head_dim");
  s.v_dim = a.get_int("v_dim");
  if (s.head_dim > kMaxDim || s.v_dim > kMaxDim || s.head_dim < 1 || s.v_dim < 1) return nullptr;
  if (batch > 65535 || s.heads > 65535) return nullptr;
  const std::vector<int64_t> q = a.get_ints("q_strides"), k = a.get_ints("k_strides"),
                             v = a.get_ints("v_strides"), y = a.get_ints("y_strides");
  if (q.size() < 3 || k.size() < 3 || v.size() < 3 || y.size() < 3) return nullptr;
  for (int i = 0; i < 3; ++i) {
    s.q[i] = q[i];
    s.k[i] = k[i];
    s.v[i] = v[i];
    s.y[i] = y[i];
  }
  s.scale = static_cast<float>(a.get_float("scale"));
  s.softcap = static_cast<float>(a.get_float("softcap", 0.0));
  s.causal = static_cast<int>(a.get_int("is_causal", 0));
  s.offset = a.get_int("offset", 0);
  s.left = a.get_int("left_window", -1);
  s.right = a.get_int("right_window", -1);
  if (spec.has_input(3)) {
    const TensorInfo& m = spec.inputs[3];
    if (m.rank() < 1 || m.rank() > 4) return nullptr;
    if (m.dtype == DType::boolean) s.mask_kind = 2;
    else if (is_float_type(m.dtype)) s.mask_kind = 1;
    else return nullptr;
    s.mask_float_type = m.dtype == DType::f16 ? 1 : m.dtype == DType::bf16 ? 2 : 0;
    s.mask_len = m.dims.back();
    for (int d = 0; d < 4; ++d) {
      const int src = d - (4 - m.rank());
      s.mask_strides[d] = (src < 0 || m.dims[src] == 1) ? 0 : m.strides[src];
    }
  }
  if ((variant == 0 || variant == 4 || variant == 5) &&
      (dtype == DType::f16 || dtype == DType::bf16))
    if (std::unique_ptr<Kernel> mma = make_attention_mma(dtype, s, batch)) return mma;
  if ((variant == 0 || variant == 5) && dtype == DType::f32)
    if (std::unique_ptr<Kernel> mma = make_attention_mma_f32(s, batch)) return mma;
  const int warps = variant == 1 ? 4 : 8;
  return std::make_unique<FlashAttention>(spec, s, batch, warps);
}

bool flash_enabled() {
  const char* env = std::getenv("GRAPHKILN_GPU_FLASH");
  return !(env && std::strcmp(env, "0") == 0);
}

}  // namespace

std::unique_ptr<Kernel> make_attention_fused_or_not(const KernelSpec& spec) {
  if (flash_enabled())
    if (std::unique_ptr<Kernel> flash = try_flash(spec)) return flash;
  return make_attention(spec);
}
#else
std::unique_ptr<Kernel> make_attention_fused_or_not(const KernelSpec& spec) {
  return make_attention(spec);
}
#endif  // NVIDIA

}  // namespace gpu
}  // namespace graphkiln
