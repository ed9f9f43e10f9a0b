// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "RotaryEmbedding" (ONNX opset 23) on float32: x viewed as (batch, seq, heads, head) through
// the strides attr `x_strides` (the lowering gives them for 4-D (B, H, S, D) or 3-D
// (B, S, H * D) input; y has x's layout); the first `dim` features of each head rotate by
// the cos / sin row of (b, s): row position_ids[b, s] of a (max_pos, cols) cache (input 3
// present; negative ids count from the end, ids out of range are clamped), else row
// b * seq + s of a (batch, seq, cols) cache. interleaved: pairs (2i, 2i + 1), else (i, i + dim/2).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class RotaryKernel : public Kernel {
 public:
  explicit RotaryKernel(const KernelSpec& spec) {
    const Attrs& a = spec.attrs;
    batch_ = a.get_int("batch");
    seq_ = a.get_int("seq");
    heads_ = a.get_int("heads");
    head_ = a.get_int("head");
    dim_ = a.get_int("dim");
    interleaved_ = a.get_int("interleaved", 0) != 0;
    st_ = a.get_ints("x_strides");
    if (st_.size() != 4) spec_error(spec, "x_strides must have 4 entries");
    const TensorInfo& cos = spec.inputs[1];
    if (cos.rank() < 2 || spec.inputs[2].dims != cos.dims)
      spec_error(spec, "cos / sin caches differ");
    cols_ = cos.dims.back();
    rows_ = cos.numel() / std::max<int64_t>(cols_, 1);
    has_pos_ = spec.has_input(3);
    pos64_ = has_pos_ && spec.inputs[3].dtype == DType::i64;
    if (dim_ % 2 || dim_ > head_ || dim_ / 2 > cols_) spec_error(spec, "bad rotary dim");
    if (!has_pos_ && rows_ != batch_ * seq_) spec_error(spec, "the caches need batch * seq rows");
    if (has_pos_ && spec.inputs[3].numel() != batch_ * seq_)
      spec_error(spec, "position_ids must be (batch, seq)");
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* cos = static_cast<const float*>(inputs[1]);
    const float* sin = static_cast<const float*>(inputs[2]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t tasks = batch_ * seq_ * heads_, half = dim_ / 2;
#pragma omp parallel for schedule(static) if (tasks * head_ > 16384)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t h = t % heads_, bs = t / heads_, s = bs % seq_, b = bs / seq_;
      int64_t row = bs;
      if (has_pos_) {
        row = pos64_ ? static_cast<const int64_t*>(inputs[3])[bs]
                     : static_cast<const int32_t*>(inputs[3])[bs];
        if (row < 0) row += rows_;
        row = std::min(std::max<int64_t>(row, 0), rows_ - 1);
      }
      const float* c = cos + row * cols_;
      const float* sn = sin + row * cols_;
      const int64_t off = b * st_[0] + s * st_[1] + h * st_[2];
      const float* xs = x + off;
      float* ys = y + off;
      const int64_t step = st_[3];
      for (int64_t i = 0; i < half; ++i) {
        const int64_t i1 = interleaved_ ? 2 * i : i, i2 = interleaved_ ? 2 * i + 1 : i + half;
        const float x1 = xs[i1 * step], x2 = xs[i2 * step];
        ys[i1 * step] = x1 * c[i] - x2 * sn[i];
        ys[i2 * step] = x1 * sn[i] + x2 * c[i];
      }
      for (int64_t d = dim_; d < head_; ++d) ys[d * step] = xs[d * step];
    }
  }

 private:
  int64_t batch_, seq_, heads_, head_, dim_, cols_, rows_;
  bool interleaved_, has_pos_, pos64_;
  std::vector<int64_t> st_;
};

std::unique_ptr<Kernel> make_rotary(const KernelSpec& spec) {
  if (spec.inputs.size() < 3 || spec.outputs.size() != 1)
    spec_error(spec, "takes X, cos, sin, position_ids?");
  for (size_t i = 0; i < 3; ++i)
    if (spec.inputs[i].dtype != DType::f32 || !spec.inputs[i].is_contiguous())
      spec_error(spec, "plain float32 only");
  if (spec.outputs[0].dtype != DType::f32 || !spec.outputs[0].is_contiguous() ||
      spec.outputs[0].dims != spec.inputs[0].dims)
    spec_error(spec, "Y must be plain float32 with X's dims");
  if (spec.has_input(3) && spec.inputs[3].dtype != DType::i64 && spec.inputs[3].dtype != DType::i32)
    spec_error(spec, "position_ids must be int64 or int32");
  return std::make_unique<RotaryKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("RotaryEmbedding", make_rotary);

}  // namespace graphkiln
