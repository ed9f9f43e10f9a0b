// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "ConvTransposeDirect": transposed convolution of plain float32 data whose weights are read
// at run time (a graph input, or geometry oneDNN's deconvolution does not take: negative pads
// from output_shape / output_padding). A scatter per output plane:
//   y[n, oc, i * s + k * d - pads_begin] += x[n, ic, i] * w[ic, oc % (M / G), k]
// over the input channels ic of oc's group, then + B[oc].
//   inputs: X (N, C, spatial...), W (C, M / G, k...) as ONNX has it, B? (M)
//   attrs:  group, kernel, strides, dilations, pads_begin (may be negative), in_dims,
//           out_dims: 3 entries each, spatial dims padded in front with 1 / 1 / 1 / 0 / 1 / 1.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

// The input positions i in [0, in) whose output i * s + offset lies in [0, out).
void valid_inputs(int64_t in, int64_t out, int64_t s, int64_t offset, int64_t& lo, int64_t& hi) {
  // i * s + offset >= 0  <=>  i >= ceil(-offset / s)
  const int64_t need = -offset;
  lo = need <= 0 ? 0 : (need + s - 1) / s;
  // i * s + offset <= out - 1  <=>  i <= floor((out - 1 - offset) / s)
  const int64_t top = out - 1 - offset;
  hi = top < 0 ? 0 : std::min(in, top / s + 1);
  if (lo > hi) lo = hi;
}

class ConvTransposeDirectKernel : public Kernel {
 public:
  explicit ConvTransposeDirectKernel(const KernelSpec& spec) {
    const Attrs& a = spec.attrs;
    group_ = a.get_int("group");
    k_ = a.get_ints("kernel");
    s_ = a.get_ints("strides");
    d_ = a.get_ints("dilations");
    pb_ = a.get_ints("pads_begin");
    in_ = a.get_ints("in_dims");
    out_ = a.get_ints("out_dims");
    for (auto* v : {&k_, &s_, &d_, &pb_, &in_, &out_})
      if (v->size() != 3) spec_error(spec, "geometry attrs must have 3 entries");
    for (size_t i = 0; i < 3; ++i)
      if (s_[i] < 1 || d_[i] < 1) spec_error(spec, "strides and dilations must be positive");
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& w = spec.inputs[1];
    const TensorInfo& y = spec.outputs[0];
    batch_ = x.dims[0];
    channels_ = x.dims[1];
    out_channels_ = y.dims[1];
    if (group_ < 1 || channels_ % group_ != 0 || out_channels_ % group_ != 0)
      spec_error(spec, "group must divide the input and output channels");
    if (w.dims[0] != channels_ || w.dims[1] * group_ != out_channels_)
      spec_error(spec, "W must be (C, M / group, kernel...)");
    const int64_t taps = k_[0] * k_[1] * k_[2];
    in_plane_ = in_[0] * in_[1] * in_[2];
    out_plane_ = out_[0] * out_[1] * out_[2];
    if (batch_ * channels_ * in_plane_ != x.numel() ||
        batch_ * out_channels_ * out_plane_ != y.numel() ||
        w.numel() != w.dims[0] * w.dims[1] * taps)
      spec_error(spec, "dims do not match the geometry");
    has_bias_ = spec.has_input(2);
    if (has_bias_ && spec.inputs[2].numel() != out_channels_)
      spec_error(spec, "B must have one value per output channel");
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* w = static_cast<const float*>(inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(inputs[2]) : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    const int64_t icg = channels_ / group_, ocg = out_channels_ / group_;
    const int64_t taps = k_[0] * k_[1] * k_[2];
    const int64_t planes = batch_ * out_channels_;
#pragma omp parallel for schedule(static) if (planes * out_plane_ * icg * taps > 32768)
    for (int64_t p = 0; p < planes; ++p) {
      const int64_t n = p / out_channels_, oc = p % out_channels_;
      const int64_t g = oc / ocg, m = oc % ocg;
      float* yp = y + p * out_plane_;
      std::fill(yp, yp + out_plane_, b ? b[oc] : 0.0f);
      for (int64_t c = g * icg; c < (g + 1) * icg; ++c) {
        const float* xp = x + (n * channels_ + c) * in_plane_;
        const float* wp = w + (c * ocg + m) * taps;
        scatter_plane(xp, wp, yp);
      }
    }
  }

 private:
  // yp += the transposed convolution of one input plane with one kernel.
  void scatter_plane(const float* xp, const float* wp, float* yp) const {
    for (int64_t k0 = 0; k0 < k_[0]; ++k0) {
      const int64_t off0 = k0 * d_[0] - pb_[0];
      int64_t lo0, hi0;
      valid_inputs(in_[0], out_[0], s_[0], off0, lo0, hi0);
      for (int64_t k1 = 0; k1 < k_[1]; ++k1) {
        const int64_t off1 = k1 * d_[1] - pb_[1];
        int64_t lo1, hi1;
        valid_inputs(in_[1], out_[1], s_[1], off1, lo1, hi1);
        for (int64_t k2 = 0; k2 < k_[2]; ++k2) {
          const int64_t off2 = k2 * d_[2] - pb_[2];
          int64_t lo2, hi2;
          valid_inputs(in_[2], out_[2], s_[2], off2, lo2, hi2);
          const float wv = wp[(k0 * k_[1] + k1) * k_[2] + k2];
          for (int64_t i0 = lo0; i0 < hi0; ++i0) {
            const int64_t o0 = i0 * s_[0] + off0;
            for (int64_t i1 = lo1; i1 < hi1; ++i1) {
              const int64_t o1 = i1 * s_[1] + off1;
              const float* xr = xp + (i0 * in_[1] + i1) * in_[2];
              const int64_t row = (o0 * out_[1] + o1) * out_[2] + off2, s2 = s_[2];
              for (int64_t i2 = lo2; i2 < hi2; ++i2) yp[row + i2 * s2] += xr[i2] * wv;
            }
          }
        }
      }
    }
  }

  int64_t group_ = 1, batch_ = 0, channels_ = 0, out_channels_ = 0;
  int64_t in_plane_ = 0, out_plane_ = 0;
  bool has_bias_ = false;
  std::vector<int64_t> k_, s_, d_, pb_, in_, out_;
};

std::unique_ptr<Kernel> make_conv_transpose_direct(const KernelSpec& spec) {
  if (spec.inputs.size() < 2 || spec.inputs.size() > 3 || spec.outputs.size() != 1)
    spec_error(spec, "takes X, W[, B] -> Y");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& w = spec.inputs[1];
  const TensorInfo& y = spec.outputs[0];
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank() || y.rank() != x.rank())
    spec_error(spec, "X, W and Y must be 3-D to 5-D, of one rank");
  bool f32 = x.dtype == DType::f32 && w.dtype == DType::f32 && y.dtype == DType::f32;
  if (spec.has_input(2)) f32 = f32 && spec.inputs[2].dtype == DType::f32;
  if (!f32) spec_error(spec, "float32 only");
  bool plain = x.is_contiguous() && w.is_contiguous() && y.is_contiguous();
  if (spec.has_input(2)) plain = plain && spec.inputs[2].is_contiguous();
  if (!plain) spec_error(spec, "plain data only");
  return std::make_unique<ConvTransposeDirectKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("ConvTransposeDirect", make_conv_transpose_direct);

}  // namespace graphkiln
