// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// ResizeAxis: float32 x [outer, in_len, inner] -> y [outer, out_len, inner] with
// y[o, j, i] = sum over the taps t of x[o, index[j, t], i] * weight[j, t], summed in tap
// order (linear and cubic Resize, one step per resized axis; the lowering computes the taps
// with the ref target's own filter code). The same kernel as src/gpu/data.hip's.
#include <omp.h>

#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class ResizeAxisKernel : public Kernel {
 public:
  explicit ResizeAxisKernel(const KernelSpec& spec) {
    outer_ = spec.attrs.get_int("outer");
    in_len_ = spec.attrs.get_int("in_len");
    out_len_ = spec.attrs.get_int("out_len");
    inner_ = spec.attrs.get_int("inner");
    taps_ = spec.attrs.get_int("taps");
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& y = spec.outputs[0];
    if (outer_ < 0 || in_len_ < 1 || out_len_ < 0 || inner_ < 0 || taps_ < 1 ||
        outer_ * in_len_ * inner_ != x.numel() || outer_ * out_len_ * inner_ != y.numel())
      spec_error(spec, "sizes do not match the data");
    index_ = spec.attrs.get_ints("index");
    const std::vector<double> weights = spec.attrs.get_floats("weights");
    if (static_cast<int64_t>(index_.size()) != out_len_ * taps_ || index_.size() != weights.size())
      spec_error(spec, "index and weights must hold out_len * taps entries");
    for (int64_t v : index_)
      if (v < 0 || v >= in_len_) spec_error(spec, "a tap index is out of range");
    weights_.assign(weights.begin(), weights.end());
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t rows = outer_ * out_len_, inner = inner_, taps = taps_;
    const int64_t in_len = in_len_, out_len = out_len_;
    const int64_t* index = index_.data();
    const float* weights = weights_.data();
#pragma omp parallel for schedule(static) if (rows * inner * taps > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r / out_len, j = r % out_len;
      const float* xs = x + o * in_len * inner;
      const int64_t* ix = index + j * taps;
      const float* wj = weights + j * taps;
      float* d = y + r * inner;
      const float* s0 = xs + ix[0] * inner;
      const float w0 = wj[0];
      for (int64_t i = 0; i < inner; ++i) d[i] = s0[i] * w0;
      for (int64_t t = 1; t < taps; ++t) {
        const float* st = xs + ix[t] * inner;
        const float wt = wj[t];
        for (int64_t i = 0; i < inner; ++i) d[i] = d[i] + st[i] * wt;
      }
    }
  }

 private:
  int64_t outer_ = 1, in_len_ = 1, out_len_ = 1, inner_ = 1, taps_ = 1;
  std::vector<int64_t> index_;
  std::vector<float> weights_;
};

std::unique_ptr<Kernel> make_resize_axis(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) spec_error(spec, "takes one input");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  if (x.dtype != DType::f32 || y.dtype != DType::f32 || !x.is_contiguous() || !y.is_contiguous())
    spec_error(spec, "plain float32 data only");
  return std::make_unique<ResizeAxisKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("ResizeAxis", make_resize_axis);

}  // namespace graphkiln
