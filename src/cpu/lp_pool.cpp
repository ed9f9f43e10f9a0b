// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "LpPool" on plain float32 (N, C, spatial...) data, 1 to 3 spatial dims (the lowering pads
// the geometry to 3): y = (sum over the window of |x|^p) ^ (1 / p), padding counting as 0.
// attrs: p, kernel, strides, dilations, pads_begin (3 each, spatial dims padded in front
// with 1 / 1 / 1 / 0), in_dims, out_dims (3 each).
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class LpPoolKernel : public Kernel {
 public:
  explicit LpPoolKernel(const KernelSpec& spec) {
    const Attrs& a = spec.attrs;
    p_ = static_cast<float>(a.get_float("p"));
    k_ = a.get_ints("kernel");
    s_ = a.get_ints("strides");
    d_ = a.get_ints("dilations");
    pb_ = a.get_ints("pads_begin");
    in_ = a.get_ints("in_dims");
    out_ = a.get_ints("out_dims");
    for (auto* v : {&k_, &s_, &d_, &pb_, &in_, &out_})
      if (v->size() != 3) spec_error(spec, "geometry attrs must have 3 entries");
    planes_ = spec.inputs[0].dims[0] * spec.inputs[0].dims[1];
    if (planes_ * in_[0] * in_[1] * in_[2] != spec.inputs[0].numel() ||
        planes_ * out_[0] * out_[1] * out_[2] != spec.outputs[0].numel())
      spec_error(spec, "dims do not match the geometry");
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t in_plane = in_[0] * in_[1] * in_[2], out_plane = out_[0] * out_[1] * out_[2];
    const float p = p_, inv_p = 1.0f / p_;
    const bool square = p_ == 2.0f, abs1 = p_ == 1.0f;
#pragma omp parallel for schedule(static) if (planes_ * out_plane > 4096)
    for (int64_t pl = 0; pl < planes_; ++pl) {
      const float* xp = x + pl * in_plane;
      float* yp = y + pl * out_plane;
      for (int64_t o0 = 0; o0 < out_[0]; ++o0)
        for (int64_t o1 = 0; o1 < out_[1]; ++o1)
          for (int64_t o2 = 0; o2 < out_[2]; ++o2) {
            float total = 0.0f;
            for (int64_t a = 0; a < k_[0]; ++a) {
              const int64_t i0 = o0 * s_[0] - pb_[0] + a * d_[0];
              if (i0 < 0 || i0 >= in_[0]) continue;
              for (int64_t b = 0; b < k_[1]; ++b) {
                const int64_t i1 = o1 * s_[1] - pb_[1] + b * d_[1];
                if (i1 < 0 || i1 >= in_[1]) continue;
                for (int64_t c = 0; c < k_[2]; ++c) {
                  const int64_t i2 = o2 * s_[2] - pb_[2] + c * d_[2];
                  if (i2 < 0 || i2 >= in_[2]) continue;
                  const float v = std::fabs(xp[(i0 * in_[1] + i1) * in_[2] + i2]);
                  total += square ? v * v : abs1 ? v : std::pow(v, p);
                }
              }
            }
            yp[(o0 * out_[1] + o1) * out_[2] + o2] = square ? std::sqrt(total)
                                                     : abs1 ? total
                                                            : std::pow(total, inv_p);
          }
    }
  }

 private:
  float p_;
  std::vector<int64_t> k_, s_, d_, pb_, in_, out_;
  int64_t planes_ = 0;
};

std::unique_ptr<Kernel> make_lp_pool(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) spec_error(spec, "takes X -> Y");
  const TensorInfo& x = spec.inputs[0];
  if (x.dtype != DType::f32 || spec.outputs[0].dtype != DType::f32)
    spec_error(spec, "float32 only");
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  if (x.rank() < 3 || x.rank() > 5) spec_error(spec, "1 to 3 spatial dims");
  return std::make_unique<LpPoolKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("LpPool", make_lp_pool);

}  // namespace graphkiln
