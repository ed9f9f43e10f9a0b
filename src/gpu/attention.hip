// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Attention (f32): per batch, scores = scale * Q K^T (one batched product, or one per key /
// value head for grouped-query attention), then soft cap, mask, causal frontier and sliding
// window, and softmax per row in place (a row with no allowed key gives zeros), then Y = P V.
// Past state arrives already concatenated into K and V by the lowering (present_key/value). Q, K, V and Y are described by the lowering as
// (batch, head, row) strides with contiguous features, so [B, S, H*D] and [B, H, S, D]
// layouts both run without a transpose.
#include "gpu/common.hpp"

#include <cstdint>

#include "gpu/blas.hpp"
#include "gpu/block_reduce.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

struct MaskInfo {
  int kind = 0;  // 0 none, 1 additive float, 2 bool (false masks the key)
  int causal = 0;
  int64_t offset = 0;               // query i sits at position offset + i (the past length)
  int64_t left = -1, right = -1;    // sliding window around that position; -1: unbounded
  float softcap = 0.f;              // scores -> softcap * tanh(scores / softcap) when > 0
  int qk_mode = -1;                 // which stage output 1 receives: raw, capped, biased, probs
  int64_t mask_len = 0;             // keys past the mask's last dim are masked
  Strides map;                      // [B, H, Sq, Tm] -> mask element
};

// One block per (head, query row) of one batch; scores [H, Sq, T] in place.
__global__ void masked_softmax(float* scores, const void* mask, float* qk_out, MaskInfo mi,
                               int64_t batch, int64_t heads, int64_t q_seq, int64_t total) {
  const int64_t row_id = blockIdx.x;  // h * q_seq + i
  const int64_t h = row_id / q_seq, i = row_id % q_seq, pos = mi.offset + i;
  float* row = scores + row_id * total;
  float* qk = qk_out ? qk_out + row_id * total : nullptr;
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
      const int64_t at = map_offset(mi.map, ((batch * heads + h) * q_seq + i) * mi.mask_len + j);
      if (mi.kind == 1) v += static_cast<const float*>(mask)[at];
      else if (!static_cast<const unsigned char*>(mask)[at]) return -INFINITY;
    }
    return v;
  };
  if (qk && mi.qk_mode < 3)
    for (int64_t j = threadIdx.x; j < total; j += blockDim.x)
      qk[j] = mi.qk_mode == 0 ? row[j] : (mi.qk_mode == 1 ? capped(j) : biased(j));
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
    if (qk && mi.qk_mode == 3) qk[j] = row[j];
  }
}

class Attention : public Kernel {
 public:
  explicit Attention(const KernelSpec& spec) {
    const Attrs& a = spec.attrs;
    for (int i = 0; i < 3; ++i)
      if (spec.inputs.at(i).dtype != DType::f32) spec_error(spec, "only float32 is supported");
    batch_ = a.get_int("batch");
    heads_ = a.get_int("heads");
    kv_heads_ = a.get_int("kv_heads", heads_);
    if (kv_heads_ <= 0 || heads_ % kv_heads_) spec_error(spec, "query heads must be a multiple of kv heads");
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
      if (mask_.kind == 1 && m.dtype != DType::f32) spec_error(spec, "float masks must be float32");
      mask_.mask_len = m.dims.back();
      const int64_t full[4] = {batch_, heads_, q_seq_, mask_.mask_len};
      mask_.map.rank = 4;
      for (int d = 0; d < 4; ++d) {
        const int src = d - (4 - m.rank());
        mask_.map.dims[d] = full[d];
        mask_.map.strides[d] = (src < 0 || m.dims[src] == 1) ? 0 : m.strides[src];
      }
    }
  }

  size_t workspace_bytes() const override {
    return static_cast<size_t>(heads_ * q_seq_ * kv_seq_) * sizeof(float);
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) override {
    const float* q = static_cast<const float*>(inputs[0]);
    const float* k = static_cast<const float*>(inputs[1]);
    const float* v = static_cast<const float*>(inputs[2]);
    const void* mask = mask_.kind ? inputs[3] : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    float* qk = mask_.qk_mode >= 0 ? static_cast<float*>(outputs[1]) : nullptr;
    float* scores = static_cast<float*>(ctx.workspace);
    if (heads_ * q_seq_ == 0) return;
    const int64_t group = heads_ / kv_heads_, plane = q_seq_ * kv_seq_;
    // query heads h = j * group + g read key / value head j: one batched product per kv head
    // (per batch when group is 1)
    const int64_t passes = group == 1 ? 1 : kv_heads_;
    const int64_t per_pass = group == 1 ? heads_ : group;
    for (int64_t b = 0; b < batch_; ++b) {
      for (int64_t j = 0; j < passes; ++j) {
        GemmArgs s;
        s.m = q_seq_;
        s.n = kv_seq_;
        s.k = head_dim_;
        s.batch = per_pass;
        s.alpha = scale_;
        s.a = q + b * q_[0] + j * group * q_[1];
        s.lda = q_[2];
        s.stride_a = q_[1];
        s.trans_b = true;
        s.b = k + b * k_[0] + j * k_[1];
        s.ldb = k_[2];
        s.stride_b = group == 1 ? k_[1] : 0;
        s.c = scores + j * group * plane;
        s.ldc = kv_seq_;
        s.stride_c = plane;
        ctx.blas->sgemm(s);
      }
      masked_softmax<<<static_cast<unsigned>(heads_ * q_seq_), kRowThreads, 0, ctx.stream>>>(
          scores, mask, qk ? qk + b * heads_ * plane : nullptr, mask_, b, heads_, q_seq_, kv_seq_);
      check_launch("masked_softmax");
      for (int64_t j = 0; j < passes; ++j) {
        GemmArgs o;
        o.m = q_seq_;
        o.n = v_dim_;
        o.k = kv_seq_;
        o.batch = per_pass;
        o.a = scores + j * group * plane;
        o.lda = kv_seq_;
        o.stride_a = plane;
        o.b = v + b * v_[0] + j * v_[1];
        o.ldb = v_[2];
        o.stride_b = group == 1 ? v_[1] : 0;
        o.c = y + b * y_[0] + j * group * y_[1];
        o.ldc = y_[2];
        o.stride_c = y_[1];
        ctx.blas->sgemm(o);
      }
    }
  }

 private:
  int64_t batch_ = 1, heads_ = 1, kv_heads_ = 1, q_seq_ = 0, kv_seq_ = 0, head_dim_ = 0, v_dim_ = 0;
  std::vector<int64_t> q_, k_, v_, y_;
  float scale_ = 1.f;
  MaskInfo mask_;
};

}  // namespace

std::unique_ptr<Kernel> make_attention(const KernelSpec& spec) {
  return std::make_unique<Attention>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
