// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "ConvInteger" (x, w, x_zero_point?, w_zero_point? -> int32 y) and "QLinearConv" (x, x_scale,
// x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B? -> 8-bit y): grouped
// correlations of i8 / u8 x [N, C, *in] with w [M, C / group, *kernel] (plain tensors, any
// number of spatial dims), both minus their zero points (x's: one value, its first element
// as ref reads it; w's: one, or one per output channel); padding contributes zero (the
// padded x equals its zero point). Sums in int32, wrapping modulo 2^32 like ref's cast.
//
// attrs (targets/native/lower_integer.py): in_dims, kernel, out_dims, pads_begin, strides,
// dilations (one per spatial dim), group.
//
// QLinearConv requantizes as the ref target does, in double: y = saturate(round_half_even(
// (acc + B[m]) * (x_scale * w_scale[m]) / y_scale) + y_zero_point); w_scale and B one value
// or one per output channel, the other parameters their first element; scales f32 / f64 /
// f16 / bf16, B int32.
//
// Per image: im2col of the centered x for all groups (int16 [C * taps, out pixels], the
// pixel each (tap, output pixel) reads a table made once), then one row of sums per output
// channel, parallel over the channels.
#include <omp.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/kernel.hpp"
#include "cpu/int_product.hpp"

namespace graphkiln {
namespace {

using int_product::is_8bit;
using int_product::load8;
using int_product::wrap_add;

constexpr int64_t kParallelWork = 1 << 15;

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

// The x offset (within one channel's image) each (tap, output pixel) reads, taps outer; -1
// in the padding.
std::vector<int64_t> tap_table(const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& out, const std::vector<int64_t>& pads,
                               const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations) {
  const size_t rank = in.size();
  const int64_t taps = product(kernel), pixels = product(out);
  std::vector<int64_t> table(static_cast<size_t>(taps * pixels));
  std::vector<int64_t> tap(rank), pix(rank);
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t rest = t, d = static_cast<int64_t>(rank) - 1; d >= 0; --d)
      tap[d] = rest % kernel[d], rest /= kernel[d];
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t rest = p, d = static_cast<int64_t>(rank) - 1; d >= 0; --d)
        pix[d] = rest % out[d], rest /= out[d];
      int64_t off = 0;
      for (size_t d = 0; d < rank && off >= 0; ++d) {
        const int64_t c = pix[d] * strides[d] - pads[d] + tap[d] * dilations[d];
        off = (c < 0 || c >= in[d]) ? -1 : off * in[d] + c;
      }
      table[t * pixels + p] = off;
    }
  }
  return table;
}

// The geometry and integer product shared by both kernels.
class IntConv {
 public:
  // x, w, x_zp, w_zp: the inputs' indices in the step
  IntConv(const KernelSpec& spec, size_t x, size_t w, size_t x_zp, size_t w_zp)
      : x_(x), w_(w), x_zp_(x_zp), w_zp_(w_zp) {
    const Attrs& attrs = spec.attrs;
    const std::vector<int64_t> in = attrs.get_ints("in_dims"), kernel = attrs.get_ints("kernel"),
                               out = attrs.get_ints("out_dims"),
                               pads = attrs.get_ints("pads_begin"),
                               strides = attrs.get_ints("strides"),
                               dilations = attrs.get_ints("dilations");
    const int64_t group = attrs.get_int("group");
    const size_t rank = in.size();
    if (rank == 0 || kernel.size() != rank || out.size() != rank || pads.size() != rank ||
        strides.size() != rank || dilations.size() != rank)
      spec_error(spec, "in_dims, kernel, out_dims, pads_begin, strides, dilations per axis");
    const TensorInfo &tx = spec.inputs[x], &tw = spec.inputs[w], &ty = spec.outputs[0];
    if (!is_8bit(tx.dtype) || !is_8bit(tw.dtype)) spec_error(spec, "x and w must be i8 or u8");
    if (!tx.is_contiguous() || !tw.is_contiguous() || !ty.is_contiguous())
      spec_error(spec, "plain tensors only");
    if (tx.rank() != static_cast<int>(rank) + 2 || tw.rank() != tx.rank() || ty.rank() != tx.rank())
      spec_error(spec, "x, w and y of rank 2 + spatial dims");
    batch_ = tx.dims[0];
    channels_ = tx.dims[1];
    maps_ = tw.dims[0];
    if (group < 1 || channels_ % group || maps_ % group || tw.dims[1] != channels_ / group)
      spec_error(spec, "channels do not fit the groups");
    for (size_t d = 0; d < rank; ++d)
      if (tx.dims[2 + d] != in[d] || tw.dims[2 + d] != kernel[d] || ty.dims[2 + d] != out[d])
        spec_error(spec, "dims differ from in_dims / kernel / out_dims");
    if (ty.dims[0] != batch_ || ty.dims[1] != maps_) spec_error(spec, "y must be [N, M, *out]");
    group_channels_ = channels_ / group;
    group_maps_ = maps_ / group;
    taps_ = product(kernel);
    pixels_ = product(out);
    image_ = product(in);
    x_signed_ = tx.dtype == DType::i8;
    w_signed_ = tw.dtype == DType::i8;
    x_zp_present_ = spec.has_input(x_zp);
    w_zp_present_ = spec.has_input(w_zp);
    if (x_zp_present_ && spec.inputs[x_zp].dtype != tx.dtype)
      spec_error(spec, "x_zero_point must have x's dtype");
    if (w_zp_present_) {
      const TensorInfo& z = spec.inputs[w_zp];
      if (z.dtype != tw.dtype) spec_error(spec, "w_zero_point must have w's dtype");
      if (z.numel() != 1 && z.numel() != maps_)
        spec_error(spec, "w_zero_point: one value or one per output channel");
      w_zp_per_map_ = z.numel() != 1;
    }
    table_ = tap_table(in, kernel, out, pads, strides, dilations);
    cols_.resize(static_cast<size_t>(channels_ * taps_ * pixels_));
    w_centered_.resize(static_cast<size_t>(maps_ * group_channels_ * taps_));
  }

  int64_t batch() const { return batch_; }
  int64_t maps() const { return maps_; }
  int64_t pixels() const { return pixels_; }
  int64_t work() const { return maps_ * group_channels_ * taps_ * pixels_; }

  // w minus its zero points, as int16
  void center_w(const void* const* inputs) {
    const void* w = inputs[w_];
    const void* zp = w_zp_present_ ? inputs[w_zp_] : nullptr;
    const int64_t row = group_channels_ * taps_;
    for (int64_t m = 0; m < maps_; ++m) {
      const int32_t z = zp ? load8(zp, w_signed_, w_zp_per_map_ ? m : 0) : 0;
      for (int64_t r = 0; r < row; ++r)
        w_centered_[m * row + r] = static_cast<int16_t>(load8(w, w_signed_, m * row + r) - z);
    }
  }

  // im2col of image n: cols[(c * taps + t) * pixels + p] = x[n, c, tap t at pixel p] - x_zp
  void build_cols(const void* const* inputs, int64_t n) {
    const void* x = inputs[x_];
    const void* zp = x_zp_present_ ? inputs[x_zp_] : nullptr;
    const int32_t z = zp ? load8(zp, x_signed_, 0) : 0;
    const int64_t taps = taps_, pixels = pixels_, image = image_;
    const int64_t* table = table_.data();
    int16_t* cols = cols_.data();
    const bool xs = x_signed_;
#pragma omp parallel for schedule(static) if (channels_ * taps * pixels > kParallelWork)
    for (int64_t c = 0; c < channels_; ++c) {
      const int64_t base = (n * channels_ + c) * image;
      int16_t* out = cols + c * taps * pixels;
      for (int64_t i = 0; i < taps * pixels; ++i)
        out[i] = table[i] < 0 ? 0 : static_cast<int16_t>(load8(x, xs, base + table[i]) - z);
    }
  }

  // acc[0..pixels) = output channel m of the image build_cols made
  void map_product(int64_t m, int32_t* acc) const {
    const int64_t row = group_channels_ * taps_, pixels = pixels_;
    const int16_t* cols = cols_.data() + (m / group_maps_) * row * pixels;
    const int16_t* wrow = w_centered_.data() + m * row;
    for (int64_t p = 0; p < pixels; ++p) acc[p] = 0;
    for (int64_t r = 0; r < row; ++r) {
      const int32_t wv = wrow[r];
      if (wv == 0) continue;
      const int16_t* crow = cols + r * pixels;
      for (int64_t p = 0; p < pixels; ++p)
        acc[p] = wrap_add(acc[p], wv * static_cast<int32_t>(crow[p]));
    }
  }

 private:
  size_t x_, w_, x_zp_, w_zp_;
  int64_t batch_, channels_, maps_, group_channels_, group_maps_, taps_, pixels_, image_;
  bool x_signed_, w_signed_, x_zp_present_, w_zp_present_, w_zp_per_map_ = false;
  std::vector<int64_t> table_;
  std::vector<int16_t> cols_, w_centered_;
};

class ConvIntegerKernel : public Kernel {
 public:
  explicit ConvIntegerKernel(const KernelSpec& spec) : conv_(spec, 0, 1, 2, 3) {}

  void run(const void* const* inputs, void* const* outputs) override {
    conv_.center_w(inputs);
    auto* y = static_cast<int32_t*>(outputs[0]);
    const int64_t maps = conv_.maps(), pixels = conv_.pixels();
    for (int64_t n = 0; n < conv_.batch(); ++n) {
      conv_.build_cols(inputs, n);
#pragma omp parallel for schedule(static) if (conv_.work() > kParallelWork)
      for (int64_t m = 0; m < maps; ++m) conv_.map_product(m, y + (n * maps + m) * pixels);
    }
  }

 private:
  IntConv conv_;
};

std::unique_ptr<Kernel> make_conv_integer(const KernelSpec& spec) {
  if (spec.inputs.size() < 2 || spec.inputs.size() > 4 || spec.outputs.size() != 1)
    spec_error(spec, "takes x, w, x_zero_point?, w_zero_point?");
  if (spec.outputs[0].dtype != DType::i32) spec_error(spec, "the output must be i32");
  return std::make_unique<ConvIntegerKernel>(spec);
}

class QLinearConvKernel : public Kernel {
 public:
  explicit QLinearConvKernel(const KernelSpec& spec) : conv_(spec, 0, 3, 2, 5) {
    for (size_t i : {1, 4, 6}) scale_dtype_[i] = spec.inputs[i].dtype;
    w_scale_per_map_ = spec.inputs[4].numel() != 1;
    has_bias_ = spec.has_input(8);
    bias_per_map_ = has_bias_ && spec.inputs[8].numel() != 1;
    out_dtype_ = spec.outputs[0].dtype;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    using int_product::load_scale;
    conv_.center_w(inputs);
    const double x_scale = load_scale(scale_dtype_[1], inputs[1], 0);
    const double y_scale = load_scale(scale_dtype_[6], inputs[6], 0);
    const int_product::Requantizer requant(out_dtype_,
                                           load8(inputs[7], out_dtype_ == DType::i8, 0));
    const auto* bias = has_bias_ ? static_cast<const int32_t*>(inputs[8]) : nullptr;
    void* y = outputs[0];
    const int64_t maps = conv_.maps(), pixels = conv_.pixels();
    for (int64_t n = 0; n < conv_.batch(); ++n) {
      conv_.build_cols(inputs, n);
#pragma omp parallel if (conv_.work() > kParallelWork)
      {
        std::vector<int32_t> acc(static_cast<size_t>(pixels));
#pragma omp for schedule(static)
        for (int64_t m = 0; m < maps; ++m) {
          conv_.map_product(m, acc.data());
          const double scale =
              x_scale * load_scale(scale_dtype_[4], inputs[4], w_scale_per_map_ ? m : 0);
          const double b = has_bias_ ? static_cast<double>(bias[bias_per_map_ ? m : 0]) : 0.0;
          const int64_t base = (n * maps + m) * pixels;
          for (int64_t p = 0; p < pixels; ++p) {
            const double sum = has_bias_ ? static_cast<double>(acc[p]) + b : acc[p];
            requant.store(y, base + p, sum * scale / y_scale);
          }
        }
      }
    }
  }

 private:
  IntConv conv_;
  DType scale_dtype_[7] = {};
  bool w_scale_per_map_, has_bias_, bias_per_map_;
  DType out_dtype_;
};

std::unique_ptr<Kernel> make_qlinear_conv(const KernelSpec& spec) {
  if (spec.inputs.size() < 8 || spec.inputs.size() > 9 || spec.outputs.size() != 1)
    spec_error(spec,
               "takes x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, "
               "y_zero_point, B?");
  for (size_t i = 0; i < 8; ++i)
    if (!spec.has_input(i)) spec_error(spec, "every input but B is required");
  const TensorInfo& y = spec.outputs[0];
  if (!is_8bit(y.dtype)) spec_error(spec, "the output must be i8 or u8");
  if (spec.inputs[7].dtype != y.dtype) spec_error(spec, "y_zero_point must have y's dtype");
  for (size_t i : {1, 4, 6})
    if (!int_product::is_float(spec.inputs[i].dtype)) spec_error(spec, "scales must be floats");
  const int64_t maps = spec.inputs[3].rank() > 0 ? spec.inputs[3].dims[0] : 0;
  const int64_t w_scales = spec.inputs[4].numel();
  if (w_scales != 1 && w_scales != maps)
    spec_error(spec, "w_scale: one value or one per output channel");
  if (spec.has_input(8)) {
    const TensorInfo& b = spec.inputs[8];
    if (b.dtype != DType::i32 || (b.numel() != 1 && b.numel() != maps))
      spec_error(spec, "B: i32, one value or one per output channel");
  }
  return std::make_unique<QLinearConvKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("ConvInteger", make_conv_integer);
GRAPHKILN_REGISTER_KERNEL("QLinearConv", make_qlinear_conv);

}  // namespace graphkiln
