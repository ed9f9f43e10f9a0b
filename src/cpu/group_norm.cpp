// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Per-channel normalizations of plain float32 (N, C, spatial...) data:
//   "GroupNormalization" (attrs groups, epsilon; inputs X, scale (C), bias (C)): mean and
//     variance over each group of C / groups channels and all spatial positions, then
//     y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c] (InstanceNormalization is
//     groups = C);
//   "BatchNormalization" (inference; attr epsilon; inputs X, scale, B, mean, var (C each)):
//     y = x * gain + shift, gain = scale / sqrt(var + epsilon), shift = B - mean * gain.
#include <omp.h>

#include <cmath>
#include <cstdint>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 16384;

// Sums in double over 8 independent lanes: one chain of double additions runs at one add
// per 4 cycles and does not vectorize (a wav2vec2 InstanceNormalization, 512 x 3199 values:
// 4.1 ms with it, against about 1 ms memory-bound).
__attribute__((target_clones("avx512f", "avx2", "default"))) double sum_of(const float* x,
                                                                           int64_t k) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= k; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += static_cast<double>(x[i + j]);
  double total = 0.0;
  for (; i < k; ++i) total += x[i];
  for (int j = 0; j < 8; ++j) total += lanes[j];
  return total;
}

// The sum of (x - mean)^2, in the same lanes.
__attribute__((target_clones("avx512f", "avx2", "default"))) double squared_deviations(
    const float* x, int64_t k, double mean) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= k; i += 8)
    for (int j = 0; j < 8; ++j) {
      const double d = static_cast<double>(x[i + j]) - mean;
      lanes[j] += d * d;
    }
  double total = 0.0;
  for (; i < k; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    total += d * d;
  }
  for (int j = 0; j < 8; ++j) total += lanes[j];
  return total;
}

struct NCS {
  int64_t n = 1, c = 1, s = 1;
};

NCS ncs(const KernelSpec& spec) {
  const TensorInfo& x = spec.inputs[0];
  if (x.rank() < 2) spec_error(spec, "X must have rank >= 2");
  if (x.dtype != DType::f32 || spec.outputs[0].dtype != DType::f32)
    spec_error(spec, "float32 only");
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  NCS v;
  v.n = x.dims[0];
  v.c = x.dims[1];
  for (int d = 2; d < x.rank(); ++d) v.s *= x.dims[d];
  for (size_t i = 1; i < spec.inputs.size(); ++i)
    if (spec.inputs[i].numel() != v.c || spec.inputs[i].dtype != DType::f32)
      spec_error(spec, "parameters must hold C float32 values");
  return v;
}

class GroupNormKernel : public Kernel {
 public:
  GroupNormKernel(NCS v, int64_t groups, float eps) : v_(v), groups_(groups), eps_(eps) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const float* bias = static_cast<const float*>(inputs[2]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t cpg = v_.c / groups_, k = cpg * v_.s, tasks = v_.n * groups_;
    if (k == 0) return;
#pragma omp parallel for schedule(static) if (tasks * k > kParallelWork)
    for (int64_t t = 0; t < tasks; ++t) {
      const float* xs = x + t * k;
      float* ys = y + t * k;
      const double mean = sum_of(xs, k) / static_cast<double>(k);
      const double sq = squared_deviations(xs, k, mean);
      const float m = static_cast<float>(mean);
      const float inv = 1.0f / std::sqrt(static_cast<float>(sq / static_cast<double>(k)) + eps_);
      const int64_t c0 = (t % groups_) * cpg;
      for (int64_t c = 0; c < cpg; ++c) {
        const float sc = scale[c0 + c], b = bias[c0 + c];
        const float* xc = xs + c * v_.s;
        float* yc = ys + c * v_.s;
        for (int64_t i = 0; i < v_.s; ++i) yc[i] = (xc[i] - m) * inv * sc + b;
      }
    }
  }

 private:
  NCS v_;
  int64_t groups_;
  float eps_;
};

std::unique_ptr<Kernel> make_group_norm(const KernelSpec& spec) {
  if (spec.inputs.size() != 3 || spec.outputs.size() != 1)
    spec_error(spec, "takes X, scale, bias -> Y");
  NCS v = ncs(spec);
  const int64_t groups = spec.attrs.get_int("groups");
  if (groups <= 0 || v.c % groups != 0) spec_error(spec, "groups must divide C");
  return std::make_unique<GroupNormKernel>(v, groups,
                                           static_cast<float>(spec.attrs.get_float("epsilon")));
}

class BatchNormKernel : public Kernel {
 public:
  BatchNormKernel(NCS v, float eps) : v_(v), eps_(eps) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const float* b = static_cast<const float*>(inputs[2]);
    const float* mean = static_cast<const float*>(inputs[3]);
    const float* var = static_cast<const float*>(inputs[4]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t rows = v_.n * v_.c, s = v_.s;
#pragma omp parallel for schedule(static) if (rows * s > kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t c = r % v_.c;
      const float gain = scale[c] / std::sqrt(var[c] + eps_);
      const float shift = b[c] - mean[c] * gain;
      const float* xr = x + r * s;
      float* yr = y + r * s;
      for (int64_t i = 0; i < s; ++i) yr[i] = xr[i] * gain + shift;
    }
  }

 private:
  NCS v_;
  float eps_;
};

std::unique_ptr<Kernel> make_batch_norm(const KernelSpec& spec) {
  if (spec.inputs.size() != 5 || spec.outputs.size() != 1)
    spec_error(spec, "takes X, scale, B, mean, var -> Y (inference)");
  return std::make_unique<BatchNormKernel>(ncs(spec),
                                           static_cast<float>(spec.attrs.get_float("epsilon")));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("GroupNormalization", make_group_norm);
GRAPHKILN_REGISTER_KERNEL("BatchNormalization", make_batch_norm);

}  // namespace graphkiln
