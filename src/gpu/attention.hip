// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Attention in float32, float16 or bfloat16 (Q, K, V, Y and the optional qk output of one
// type; float32 accumulation). scores = scale * Q K^T in float32 for every (batch, head) at
// once (one batched product when the operands' batch and head strides line up, else one per
// batch or per head, whichever is fewer; one per batch and key / value head for grouped-query
// attention), then soft cap, mask (bool, or additive float32 / the operands' type), causal
// frontier and sliding window and softmax per row (a row with no allowed key gives zeros)
// into P in place (float32), then Y = P V in float32 (half V widened to float32 first, Y
// rounded once at the end), as the fused kernel (attention_flash.hip) computes it.
// Past state arrives already concatenated into K and V by the lowering (present_key/value).
// Q, K, V and Y are described by the lowering as (batch, head, row) strides with contiguous
// features, so [B, S, H*D] and [B, H, S, D] layouts both run without a transpose.
#include "gpu/common.hpp"

#include <cstdint>
#include <type_traits>

#include "gpu/blas.hpp"
#include "gpu/block_reduce.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

struct MaskInfo {
  int kind = 0;  // 0 none, 1 additive float, 2 bool (false masks the key)
  int float_type = 0;  // additive masks: 0 float32, 1 float16, 2 bfloat16
  int causal = 0;
  int64_t offset = 0;               // query i sits at position offset + i (the past length)
  int64_t left = -1, right = -1;    // sliding window around that position; -1: unbounded
  float softcap = 0.f;              // scores -> softcap * tanh(scores / softcap) when > 0
  int qk_mode = -1;                 // which stage output 1 receives: raw, capped, biased, probs
  int64_t mask_len = 0;             // keys past the mask's last dim are masked
  int64_t strides[4] = {};          // (batch, head, query, key) -> mask element (0: broadcast)
};

__device__ inline float mask_value(const void* mask, int type, int64_t at) {
  if (type == 1) return load_float(static_cast<const F16*>(mask)[at]);
  if (type == 2) return load_float(static_cast<const BF16*>(mask)[at]);
  return static_cast<const float*>(mask)[at];
}

// One block per (batch, head, query row); scores [B, H, Sq, T] float32 become the
// probabilities in place; qk_out [B, H, Sq, T] in T.
template <typename T>
__global__ void masked_softmax(float* scores, const void* mask, T* qk_out, MaskInfo mi,
                               int64_t heads, int64_t q_seq, int64_t total) {
  const int64_t row_id = blockIdx.x;  // (b * heads + h) * q_seq + i
  const int64_t i = row_id % q_seq, h = (row_id / q_seq) % heads, b = row_id / (q_seq * heads);
  const int64_t pos = mi.offset + i;
  float* row = scores + row_id * total;
  T* qk = qk_out ? qk_out + row_id * total : nullptr;
  const int64_t mask_row = b * mi.strides[0] + h * mi.strides[1] + i * mi.strides[2];
  auto capped = [&](int64_t j) -> float {
    const float v = row[j];
    return mi.softcap > 0.f ? mi.softcap * tanhf(v / mi.softcap) : v;
  };
  auto biased = [&](int64_t j) -> float {
    float v = capped(j);
    if (mi.causal && j > pos) return -INFINITY;
    if (mi.left >= 0 && j < pos - mi.left) return -INFINITY;
    if (mi.right >= 0 && j > pos + mi.right) return -INFINITY;
    if (mi.kind != 0) {
      if (j >= mi.mask_len) return -INFINITY;
      const int64_t at = mask_row + j * mi.strides[3];
      if (mi.kind == 1) v += mask_value(mask, mi.float_type, at);
      else if (!static_cast<const unsigned char*>(mask)[at]) return -INFINITY;
    }
    return v;
  };
  if (qk && mi.qk_mode < 3)
    for (int64_t j = threadIdx.x; j < total; j += blockDim.x)
      qk[j] = store_float<T>(mi.qk_mode == 0 ? row[j] : (mi.qk_mode == 1 ? capped(j) : biased(j)));
  float top = -INFINITY;
  for (int64_t j = threadIdx.x; j < total; j += blockDim.x) top = fmaxf(top, biased(j));
  top = block_reduce(top, MaxOp());
  const bool none = isinf(top) && top < 0;
  const float shift = isfinite(top) ? top : 0.f;
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < total; j += blockDim.x) {
    const float e = none ? 0.f : expf(biased(j) - shift);
    row[j] = e;
    sum += e;
  }
  sum = block_reduce(sum, SumOp());
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  for (int64_t j = threadIdx.x; j < total; j += blockDim.x) {
    row[j] *= inv;
    if (qk && mi.qk_mode == 3) qk[j] = store_float<T>(row[j]);
  }
}

// dst[b0][b1][b2][c] = src[b0][b1][b2][c] converted (element strides of the three outer dims;
// the inner dim is contiguous on both sides)
template <typename TS, typename TD>
__global__ void convert_4d(const TS* src, TD* dst, int64_t d1, int64_t d2, int64_t d3, int64_t s0,
                           int64_t s1, int64_t s2, int64_t t0, int64_t t1, int64_t t2,
                           int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % d3, r = i / d3, b2 = r % d2, b1 = (r / d2) % d1, b0 = r / (d2 * d1);
    dst[b0 * t0 + b1 * t1 + b2 * t2 + c] =
        store_float<TD>(load_float(src[b0 * s0 + b1 * s1 + b2 * s2 + c]));
  }
}

// An operand of the per-(batch, head) products: base, element size, batch and head strides
// (elements; for K / V of grouped-query attention, the stride of a key / value head).
struct Operand {
  const void* base;
  size_t elem;
  int64_t batch_stride, head_stride;
  const void* at(int64_t b, int64_t h) const {
    return static_cast<const char*>(base) +
           (b * batch_stride + h * head_stride) * static_cast<int64_t>(elem);
  }
};

class Attention : public Kernel {
 public:
  explicit Attention(const KernelSpec& spec) {
    const Attrs& a = spec.attrs;
    dtype_ = spec.inputs.at(0).dtype;
    if (!is_float_type(dtype_)) spec_error(spec, "needs float32, float16 or bfloat16 operands");
    for (int i = 1; i < 3; ++i)
      if (spec.inputs.at(i).dtype != dtype_) spec_error(spec, "Q, K and V must have one type");
    for (const TensorInfo& t : spec.outputs)
      if (t.dtype != dtype_) spec_error(spec, "outputs must have the type of Q, K and V");
    batch_ = a.get_int("batch");
    heads_ = a.get_int("heads");
    kv_heads_ = a.get_int("kv_heads", heads_);
    if (kv_heads_ <= 0 || heads_ % kv_heads_)
      spec_error(spec, "query heads must be a multiple of kv heads");
    q_seq_ = a.get_int("q_seq");
    kv_seq_ = a.get_int("kv_seq");
    head_dim_ = a.get_int("head_dim");
    v_dim_ = a.get_int("v_dim");
    q_ = a.get_ints("q_strides");
    k_ = a.get_ints("k_strides");
    v_ = a.get_ints("v_strides");
    y_ = a.get_ints("y_strides");
    scale_ = static_cast<float>(a.get_float("scale"));
    mask_.causal = static_cast<int>(a.get_int("is_causal", 0));
    mask_.offset = a.get_int("offset", 0);
    mask_.left = a.get_int("left_window", -1);
    mask_.right = a.get_int("right_window", -1);
    mask_.softcap = static_cast<float>(a.get_float("softcap", 0.0));
    mask_.qk_mode = spec.outputs.size() > 1 ? static_cast<int>(a.get_int("qk_mode", 0)) : -1;
    if (spec.has_input(3)) {
      const TensorInfo& m = spec.inputs[3];
      if (m.rank() < 1 || m.rank() > 4) spec_error(spec, "the mask must be 1-D to 4-D");
      mask_.kind = m.dtype == DType::boolean ? 2 : 1;
      if (mask_.kind == 1 && !is_float_type(m.dtype))
        spec_error(spec, "masks must be bool, float32, float16 or bfloat16");
      mask_.float_type = m.dtype == DType::f16 ? 1 : m.dtype == DType::bf16 ? 2 : 0;
      mask_.mask_len = m.dims.back();
      for (int d = 0; d < 4; ++d) {
        const int src = d - (4 - m.rank());
        mask_.strides[d] = (src < 0 || m.dims[src] == 1) ? 0 : m.strides[src];
      }
    }
  }

  size_t workspace_bytes() const override {
    return scores_bytes() + (dtype_ == DType::f32 ? 0 : (v32_size() + y32_size()) * sizeof(float));
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    dispatch_float(dtype_, [&](auto t) { go<decltype(t)>(inputs, outputs, ctx); });
  }

 private:
  int64_t rows() const { return batch_ * heads_ * q_seq_; }
  size_t scores_bytes() const { return static_cast<size_t>(rows() * kv_seq_) * sizeof(float); }
  // float32 copies of V ([B, Hk, T, Dv]) and Y ([B, H, Sq, Dv]) for half operands
  size_t v32_size() const { return static_cast<size_t>(batch_ * kv_heads_ * kv_seq_ * v_dim_); }
  size_t y32_size() const { return static_cast<size_t>(rows() * v_dim_); }

  // C[b, h] = alpha * A[b, h] op(B[b, h']) for every batch and query head (h' = h / group)
  void multiply(GemmArgs g, const Operand& a, const Operand& b, const Operand& c,
                Context& ctx) const {
    const int64_t group = heads_ / kv_heads_;
    auto call = [&](const void* pa, const void* pb, const void* pc, int64_t batch, int64_t sa,
                    int64_t sb, int64_t sc) {
      g.a = pa;
      g.b = pb;
      g.c = const_cast<void*>(pc);
      g.batch = batch;
      g.stride_a = sa;
      g.stride_b = sb;
      g.stride_c = sc;
      ctx.blas->gemm(g);
    };
    if (group != 1) {  // per batch and kv head: the group's query heads share K / V
      for (int64_t bi = 0; bi < batch_; ++bi)
        for (int64_t j = 0; j < kv_heads_; ++j)
          call(a.at(bi, j * group), b.at(bi, j), c.at(bi, j * group), group, a.head_stride, 0,
               c.head_stride);
      return;
    }
    const bool flat = a.batch_stride == heads_ * a.head_stride &&
                      b.batch_stride == heads_ * b.head_stride &&
                      c.batch_stride == heads_ * c.head_stride;
    if (flat) {
      call(a.base, b.base, c.base, batch_ * heads_, a.head_stride, b.head_stride, c.head_stride);
    } else if (batch_ <= heads_) {
      for (int64_t bi = 0; bi < batch_; ++bi)
        call(a.at(bi, 0), b.at(bi, 0), c.at(bi, 0), heads_, a.head_stride, b.head_stride,
             c.head_stride);
    } else {
      for (int64_t h = 0; h < heads_; ++h)
        call(a.at(0, h), b.at(0, h), c.at(0, h), batch_, a.batch_stride, b.batch_stride,
             c.batch_stride);
    }
  }

  template <typename T>
  void go(const void* const* inputs, void* const* outputs, Context& ctx) const {
    if (rows() == 0) return;
    const size_t elem = sizeof(T);
    const bool wide = std::is_same<T, float>::value;
    const int64_t plane = q_seq_ * kv_seq_;
    float* scores = static_cast<float*>(ctx.workspace);
    const Operand q{inputs[0], elem, q_[0], q_[1]}, k{inputs[1], elem, k_[0], k_[1]};
    const Operand s{scores, sizeof(float), heads_ * plane, plane};
    GemmArgs g;
    g.ab_type = dtype_;
    g.c_type = DType::f32;
    g.m = q_seq_;
    g.n = kv_seq_;
    g.k = head_dim_;
    g.alpha = scale_;
    g.lda = q_[2];
    g.trans_b = true;
    g.ldb = k_[2];
    g.ldc = kv_seq_;
    multiply(g, q, k, s, ctx);
    T* qk = mask_.qk_mode >= 0 ? static_cast<T*>(outputs[1]) : nullptr;
    int threads = 32;
    while (threads < kRowThreads && threads < kv_seq_) threads *= 2;
    masked_softmax<T><<<static_cast<unsigned>(rows()), threads, 0, ctx.stream>>>(
        scores, inputs[3], qk, mask_, heads_, q_seq_, kv_seq_);
    check_launch("masked_softmax");
    GemmArgs o;  // Y = P V in float32
    o.m = q_seq_;
    o.n = v_dim_;
    o.k = kv_seq_;
    o.lda = kv_seq_;
    if (wide) {
      o.ldb = v_[2];
      o.ldc = y_[2];
      multiply(o, s, Operand{inputs[2], elem, v_[0], v_[1]},
               Operand{outputs[0], elem, y_[0], y_[1]}, ctx);
      return;
    }
    float* v32 = scores + rows() * kv_seq_;
    float* y32 = v32 + v32_size();
    const int64_t nv = static_cast<int64_t>(v32_size()), ny = static_cast<int64_t>(y32_size());
    convert_4d<T, float><<<blocks_for(nv, 256), 256, 0, ctx.stream>>>(
        static_cast<const T*>(inputs[2]), v32, kv_heads_, kv_seq_, v_dim_, v_[0], v_[1], v_[2],
        kv_heads_ * kv_seq_ * v_dim_, kv_seq_ * v_dim_, v_dim_, nv);
    check_launch("convert_4d");
    o.ldb = v_dim_;
    o.ldc = v_dim_;
    multiply(o, s, Operand{v32, sizeof(float), kv_heads_ * kv_seq_ * v_dim_, kv_seq_ * v_dim_},
             Operand{y32, sizeof(float), heads_ * q_seq_ * v_dim_, q_seq_ * v_dim_}, ctx);
    convert_4d<float, T><<<blocks_for(ny, 256), 256, 0, ctx.stream>>>(
        y32, static_cast<T*>(outputs[0]), heads_, q_seq_, v_dim_, heads_ * q_seq_ * v_dim_,
        q_seq_ * v_dim_, v_dim_, y_[0], y_[1], y_[2], ny);
    check_launch("convert_4d");
  }

  int64_t batch_ = 1, heads_ = 1, kv_heads_ = 1, q_seq_ = 0, kv_seq_ = 0, head_dim_ = 0, v_dim_ = 0;
  std::vector<int64_t> q_, k_, v_, y_;
  float scale_ = 1.f;
  DType dtype_ = DType::f32;
  MaskInfo mask_;
};

}  // namespace

std::unique_ptr<Kernel> make_attention(const KernelSpec& spec) {
  return std::make_unique<Attention>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
