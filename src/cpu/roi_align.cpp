// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "RoiAlign": x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] (int64 or
// int32) -> y [R, C, output_height, output_width]; x / rois / y float32 or float64. attrs:
// mode (avg | max), coordinate_transformation_mode (half_pixel | output_half_pixel),
// output_height, output_width, sampling_ratio (0: ceil(roi extent / output extent) samples
// per bin and axis), spatial_scale.
//
// The ref target's RoiAlign (python/graphkiln/targets/ref/pool.py) in double: each bin's
// grid of samples interpolated bilinearly (a sample beyond [-1, size] counts as 0); avg
// takes the mean of the samples, max the largest of every sample's largest weighted corner.
// A batch index out of range throws from run() before the parallel loop. Parallel over
// (roi, block of 16 channels): the taps of each sample computed once per block.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 4096;
constexpr int64_t kBlock = 16;  // channels sharing one pass over the sample taps

// one axis of a sample: its two cells, their weights, whether it lies inside
struct Tap {
  int64_t lo, hi;
  double w_lo, w_hi;
  bool inside;
};

Tap bilinear_tap(double coord, int64_t size) {
  Tap t;
  t.inside = coord >= -1.0 && coord <= static_cast<double>(size);
  double c = std::max(coord, 0.0);
  const double f = std::floor(c);
  if (!(f < static_cast<double>(size - 1))) {  // at the edge (or past it)
    t.lo = t.hi = size - 1;
    c = static_cast<double>(size - 1);
  } else {
    t.lo = static_cast<int64_t>(f);
    t.hi = t.lo + 1;
  }
  const double frac = c - static_cast<double>(t.lo);
  t.w_lo = 1.0 - frac;
  t.w_hi = frac;
  return t;
}

template <typename T, typename I>
class RoiAlignKernel : public Kernel {
 public:
  RoiAlignKernel(const KernelSpec& spec, bool max_mode, bool half_pixel)
      : max_(max_mode), half_pixel_(half_pixel) {
    const TensorInfo& x = spec.inputs[0];
    n_ = x.dims[0];
    c_ = x.dims[1];
    h_ = x.dims[2];
    w_ = x.dims[3];
    rois_ = spec.inputs[1].dims[0];
    out_h_ = spec.attrs.get_int("output_height");
    out_w_ = spec.attrs.get_int("output_width");
    sampling_ = spec.attrs.get_int("sampling_ratio");
    scale_ = spec.attrs.get_float("spatial_scale");
    name_ = spec.name;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    const T* rois = static_cast<const T*>(inputs[1]);
    const I* batch = static_cast<const I*>(inputs[2]);
    T* y = static_cast<T*>(outputs[0]);
    for (int64_t r = 0; r < rois_; ++r)
      if (batch[r] < 0 || static_cast<int64_t>(batch[r]) >= n_)
        throw std::out_of_range("RoiAlign '" + name_ + "': batch index " +
                                std::to_string(batch[r]) + " out of range for " +
                                std::to_string(n_) + " images");
    const int64_t blocks = (c_ + kBlock - 1) / kBlock, out_plane = out_h_ * out_w_;
#pragma omp parallel for schedule(static) if (rois_ * c_ * out_plane > kParallelWork)
    for (int64_t t = 0; t < rois_ * blocks; ++t) {
      const int64_t r = t / blocks, c0 = (t % blocks) * kBlock;
      const int64_t count = std::min(kBlock, c_ - c0);
      block(x + (static_cast<int64_t>(batch[r]) * c_ + c0) * h_ * w_, rois + r * 4,
            y + (r * c_ + c0) * out_plane, count);
    }
  }

 private:
  // the output planes of one roi and `channels` (<= kBlock) consecutive channels: the sample
  // taps computed once for them all
  void block(const T* image, const T* roi, T* out, int64_t channels) const {
    const double shift = half_pixel_ ? 0.5 : 0.0;
    const double x1 = static_cast<double>(roi[0]) * scale_ - shift;
    const double y1 = static_cast<double>(roi[1]) * scale_ - shift;
    const double x2 = static_cast<double>(roi[2]) * scale_ - shift;
    const double y2 = static_cast<double>(roi[3]) * scale_ - shift;
    double roi_w = x2 - x1, roi_h = y2 - y1;
    if (!half_pixel_) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
    const double bin_h = roi_h / static_cast<double>(out_h_);
    const double bin_w = roi_w / static_cast<double>(out_w_);
    const int64_t grid_h = sampling_ > 0 ? sampling_ : adaptive(roi_h, out_h_);
    const int64_t grid_w = sampling_ > 0 ? sampling_ : adaptive(roi_w, out_w_);
    const double count = static_cast<double>(grid_h * grid_w);
    const int64_t in_plane = h_ * w_, out_plane = out_h_ * out_w_;
    double acc[kBlock];
    for (int64_t ph = 0; ph < out_h_; ++ph)
      for (int64_t pw = 0; pw < out_w_; ++pw) {
        bool first = true;
        for (int64_t c = 0; c < channels; ++c) acc[c] = 0.0;
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const double yc = y1 + static_cast<double>(ph) * bin_h +
                            (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
          const Tap ty = bilinear_tap(yc, h_);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const double xc = x1 + static_cast<double>(pw) * bin_w +
                              (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            const Tap tx = bilinear_tap(xc, w_);
            const double in = ty.inside && tx.inside ? 1.0 : 0.0;
            const double w0 = ty.w_lo * tx.w_lo * in, w1 = ty.w_lo * tx.w_hi * in;
            const double w2 = ty.w_hi * tx.w_lo * in, w3 = ty.w_hi * tx.w_hi * in;
            const int64_t i0 = ty.lo * w_ + tx.lo, i1 = ty.lo * w_ + tx.hi;
            const int64_t i2 = ty.hi * w_ + tx.lo, i3 = ty.hi * w_ + tx.hi;
            for (int64_t c = 0; c < channels; ++c) {
              const T* img = image + c * in_plane;
              const double v0 = w0 * img[i0], v1 = w1 * img[i1];
              const double v2 = w2 * img[i2], v3 = w3 * img[i3];
              if (max_) {
                const double s = std::max(std::max(std::max(v0, v1), v2), v3);
                acc[c] = first ? s : std::max(acc[c], s);
              } else {
                acc[c] += v0 + v1 + v2 + v3;
              }
            }
            first = false;
          }
        }
        for (int64_t c = 0; c < channels; ++c)
          out[c * out_plane + ph * out_w_ + pw] = static_cast<T>(max_ ? acc[c] : acc[c] / count);
      }
  }

  static int64_t adaptive(double extent, int64_t out) {
    const double v = std::ceil(extent / static_cast<double>(out));
    return v > 1.0 ? static_cast<int64_t>(v) : 1;
  }

  bool max_, half_pixel_;
  int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, rois_ = 0;
  int64_t out_h_ = 1, out_w_ = 1, sampling_ = 0;
  double scale_ = 1.0;
  std::string name_;
};

std::unique_ptr<Kernel> make_roi_align(const KernelSpec& spec) {
  if (spec.inputs.size() != 3 || spec.outputs.size() != 1)
    spec_error(spec, "takes X, rois, batch_indices -> Y");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& rois = spec.inputs[1];
  const TensorInfo& bi = spec.inputs[2];
  const TensorInfo& y = spec.outputs[0];
  for (const TensorInfo* t : {&x, &rois, &bi, &y})
    if (!t->is_contiguous()) spec_error(spec, "plain data only");
  if (x.rank() != 4 || rois.rank() != 2 || rois.dims[1] != 4 || bi.rank() != 1 ||
      bi.dims[0] != rois.dims[0])
    spec_error(spec, "X must be [N, C, H, W], rois [R, 4], batch_indices [R]");
  const int64_t out_h = spec.attrs.get_int("output_height");
  const int64_t out_w = spec.attrs.get_int("output_width");
  if (out_h < 1 || out_w < 1) spec_error(spec, "output_height / output_width must be >= 1");
  if (y.rank() != 4 || y.dims[0] != rois.dims[0] || y.dims[1] != x.dims[1] || y.dims[2] != out_h ||
      y.dims[3] != out_w)
    spec_error(spec, "Y must be [R, C, output_height, output_width]");
  if ((x.dims[2] < 1 || x.dims[3] < 1) && y.numel() > 0) spec_error(spec, "empty image");
  const std::string mode = spec.attrs.get_str("mode");
  const std::string transform = spec.attrs.get_str("coordinate_transformation_mode");
  if (mode != "avg" && mode != "max") spec_error(spec, "mode must be avg or max");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    spec_error(spec, "coordinate_transformation_mode must be half_pixel or output_half_pixel");
  const bool max_mode = mode == "max", half = transform == "half_pixel";
  if (rois.dtype != x.dtype || y.dtype != x.dtype) spec_error(spec, "X, rois, Y of one type");
  if (x.dtype == DType::f32 && bi.dtype == DType::i64)
    return std::make_unique<RoiAlignKernel<float, int64_t>>(spec, max_mode, half);
  if (x.dtype == DType::f32 && bi.dtype == DType::i32)
    return std::make_unique<RoiAlignKernel<float, int32_t>>(spec, max_mode, half);
  if (x.dtype == DType::f64 && bi.dtype == DType::i64)
    return std::make_unique<RoiAlignKernel<double, int64_t>>(spec, max_mode, half);
  if (x.dtype == DType::f64 && bi.dtype == DType::i32)
    return std::make_unique<RoiAlignKernel<double, int32_t>>(spec, max_mode, half);
  spec_error(spec, "float32 / float64 data, int64 / int32 batch indices");
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("RoiAlign", make_roi_align);

}  // namespace graphkiln
