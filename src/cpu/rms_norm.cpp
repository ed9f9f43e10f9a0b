// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "RMSNormalization" over the trailing dims of plain float32 data:
// y = x / sqrt(mean(x * x) + epsilon) * scale, the mean over K = prod(dims[axis:]).
// attrs: axis (non-negative), epsilon; inputs X, Scale (K float32 values, the lowering
// broadcasts a smaller constant one); output Y.
#include <omp.h>

#include <cmath>
#include <cstdint>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 16384;

class RmsNormKernel : public Kernel {
 public:
  RmsNormKernel(int64_t rows, int64_t k, float eps) : rows_(rows), K_(k), eps_(eps) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t K = K_, rows = rows_;
    if (K == 0) return;
    const float eps = eps_;
#pragma omp parallel for schedule(static) if (rows * K > kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * K;
      float* yr = y + r * K;
      // 8 float partial sums (vectorizes), combined in double
      float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= K; i += 8)
        for (int l = 0; l < 8; ++l) part[l] += xr[i + l] * xr[i + l];
      double sum = 0.0;
      for (int l = 0; l < 8; ++l) sum += part[l];
      for (; i < K; ++i) sum += static_cast<double>(xr[i]) * xr[i];
      const float mean_square = static_cast<float>(sum / static_cast<double>(K));
      const float inv = 1.0f / std::sqrt(mean_square + eps);
      for (int64_t j = 0; j < K; ++j) yr[j] = (xr[j] * inv) * scale[j];
    }
  }

 private:
  int64_t rows_, K_;
  float eps_;
};

std::unique_ptr<Kernel> make_rms_norm(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1) spec_error(spec, "takes X, Scale -> Y");
  const TensorInfo& x = spec.inputs[0];
  if (x.dtype != DType::f32 || spec.outputs[0].dtype != DType::f32)
    spec_error(spec, "only float32 is supported");
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous() || !spec.inputs[1].is_contiguous())
    spec_error(spec, "plain data only");
  const int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0 || axis > x.rank()) spec_error(spec, "axis out of range");
  int64_t rows = 1, K = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= x.dims[d];
  for (int64_t d = axis; d < x.rank(); ++d) K *= x.dims[d];
  if (spec.inputs[1].numel() != K || spec.inputs[1].dtype != DType::f32)
    spec_error(spec, "Scale must hold prod(dims[axis:]) float32 values");
  return std::make_unique<RmsNormKernel>(rows, K,
                                         static_cast<float>(spec.attrs.get_float("epsilon")));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("RMSNormalization", make_rms_norm);

}  // namespace graphkiln
