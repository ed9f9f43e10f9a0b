// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "LRN": local response normalization across channels of plain float32 (N, C, spatial...)
// data, as ONNX defines it:
//   square_sum[n, c, j] = sum of x[n, c', j]^2 for c' in [c - floor((size - 1) / 2),
//                         c + ceil((size - 1) / 2)] (channels outside count as 0)
//   y = x / (bias + alpha / size * square_sum) ^ beta
// attrs: size, alpha_over_size (alpha / size, computed in Python as ref does), beta, bias.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class LrnKernel : public Kernel {
 public:
  explicit LrnKernel(const KernelSpec& spec) {
    const Attrs& a = spec.attrs;
    size_ = a.get_int("size");
    if (size_ < 1) spec_error(spec, "size must be positive");
    alpha_over_size_ = static_cast<float>(a.get_float("alpha_over_size"));
    beta_ = static_cast<float>(a.get_float("beta"));
    bias_ = static_cast<float>(a.get_float("bias"));
    const TensorInfo& x = spec.inputs[0];
    batch_ = x.dims[0];
    channels_ = x.dims[1];
    inner_ = 1;
    for (int i = 2; i < x.rank(); ++i) inner_ *= x.dims[i];
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t before = (size_ - 1) / 2, after = size_ / 2;
    const int64_t channels = channels_, inner = inner_, planes = batch_ * channels_;
    const float aos = alpha_over_size_, beta = beta_, bias = bias_;
#pragma omp parallel for schedule(static) if (planes * inner * size_ > 32768)
    for (int64_t p = 0; p < planes; ++p) {
      const int64_t n = p / channels, c = p % channels;
      const int64_t first = std::max<int64_t>(0, c - before);
      const int64_t last = std::min<int64_t>(channels - 1, c + after);
      const float* xn = x + n * channels * inner;
      const float* xp = x + p * inner;
      float* yp = y + p * inner;
      for (int64_t j = 0; j < inner; ++j) {
        float square_sum = 0.0f;
        for (int64_t cc = first; cc <= last; ++cc) {
          const float v = xn[cc * inner + j];
          square_sum += v * v;
        }
        yp[j] = xp[j] / std::pow(bias + aos * square_sum, beta);
      }
    }
  }

 private:
  int64_t size_ = 1, batch_ = 0, channels_ = 0, inner_ = 1;
  float alpha_over_size_ = 0.0f, beta_ = 0.0f, bias_ = 0.0f;
};

std::unique_ptr<Kernel> make_lrn(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) spec_error(spec, "takes X -> Y");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  if (x.dtype != DType::f32 || y.dtype != DType::f32) spec_error(spec, "float32 only");
  if (x.rank() < 2 || y.dims != x.dims) spec_error(spec, "X (N, C, ...) and Y of its dims");
  if (!x.is_contiguous() || !y.is_contiguous()) spec_error(spec, "plain data only");
  return std::make_unique<LrnKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("LRN", make_lrn);

}  // namespace graphkiln
