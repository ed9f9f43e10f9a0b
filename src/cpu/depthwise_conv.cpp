// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Direct depthwise convolution for the filters oneDNN runs only through its gemm or reference
// code: 1-D and 2-D depthwise filters wider than its direct kernels take (more than ~15 taps,
// or dilated wide ones: TCNs, QuartzNet-style speech models, large-kernel 1-D CNNs).
// conv.cpp's "Conv" hands such a step here (make_depthwise_conv) when the step has no
// post-ops; everything else stays on oneDNN.
//   y[n, c, oh, ow] = b[c] + sum over kh, kw of
//                     x[n, c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] * w[c, 0, kh, kw]
// (taps outside the input read zero). X and Y are both channels-last (the loop runs along
// channels, 64 at a time in registers) or both plain (it runs along the output row).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "cpu/depthwise_conv.hpp"

namespace graphkiln {
namespace {

struct Geometry {
  int64_t batch, channels, in_h, in_w, out_h, out_w;
  int64_t k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_h, pad_w;
};

constexpr int64_t kBlock = 64;  // channels per register block (4 x 16 lanes on AVX-512)

// One output pixel of a channels-last tensor, channels [c0, c0 + width).
// `taps` is (kh, kw) major, channel minor: taps[(kh * k_w + kw) * C + c].
__attribute__((target_clones("avx512f", "avx2", "default"))) void pixel_channels_last(
    const Geometry& g, const float* x_image, const float* taps, const float* bias, int64_t oh,
    int64_t ow, int64_t c0, int64_t width, float* out) {
  float acc[kBlock];
  for (int64_t c = 0; c < kBlock; ++c) acc[c] = 0.0f;
  if (bias != nullptr)
    for (int64_t c = 0; c < width; ++c) acc[c] = bias[c0 + c];
  const int64_t C = g.channels;
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dil_h;
    if (ih < 0 || ih >= g.in_h) continue;
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      const int64_t iw = ow * g.stride_w - g.pad_w + kw * g.dil_w;
      if (iw < 0 || iw >= g.in_w) continue;
      const float* in = x_image + (ih * g.in_w + iw) * C + c0;
      const float* wk = taps + (kh * g.k_w + kw) * C + c0;
      if (width == kBlock) {
        for (int64_t c = 0; c < kBlock; ++c) acc[c] += in[c] * wk[c];
      } else {
        for (int64_t c = 0; c < width; ++c) acc[c] += in[c] * wk[c];
      }
    }
  }
  for (int64_t c = 0; c < width; ++c) out[c] = acc[c];
}

// One output row y[n, c, oh, :] of a plain tensor. `taps` is w as given: taps[c][kh][kw].
__attribute__((target_clones("avx512f", "avx2", "default"))) void row_plain(const Geometry& g,
                                                                            const float* x_plane,
                                                                            const float* taps,
                                                                            float bias, int64_t oh,
                                                                            float* out) {
  for (int64_t ow = 0; ow < g.out_w; ++ow) out[ow] = bias;
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dil_h;
    if (ih < 0 || ih >= g.in_h) continue;
    const float* in_row = x_plane + ih * g.in_w;
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      const float wk = taps[kh * g.k_w + kw];
      const int64_t shift = kw * g.dil_w - g.pad_w;  // iw = ow * stride + shift
      // the outputs whose tap lands inside the row: 0 <= ow * stride + shift < in_w
      int64_t lo = shift >= 0 ? 0 : (-shift + g.stride_w - 1) / g.stride_w;
      int64_t hi = g.in_w - 1 - shift < 0 ? 0 : (g.in_w - 1 - shift) / g.stride_w + 1;
      hi = std::min(hi, g.out_w);
      if (g.stride_w == 1) {
        const float* in = in_row + shift;
        for (int64_t ow = lo; ow < hi; ++ow) out[ow] += in[ow] * wk;
      } else {
        for (int64_t ow = lo; ow < hi; ++ow) out[ow] += in_row[ow * g.stride_w + shift] * wk;
      }
    }
  }
}

class DepthwiseConvKernel : public Kernel {
 public:
  DepthwiseConvKernel(const KernelSpec& spec, bool channels_last) : channels_last_(channels_last) {
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& w = spec.inputs[1];
    const TensorInfo& y = spec.outputs[0];
    const bool two_d = x.rank() == 4;
    // window attributes per spatial axis: (height, width) for 2-D, (width) for 1-D
    auto at = [two_d](const std::vector<int64_t>& v, int axis_2d) -> int64_t {
      return two_d ? v[axis_2d] : v[0];
    };
    const auto strides = spec.attrs.get_ints("strides");
    const auto dilations = spec.attrs.get_ints("dilations");
    const auto pads = spec.attrs.get_ints("pads_begin");
    g_.batch = x.dims[0];
    g_.channels = x.dims[1];
    g_.in_h = two_d ? x.dims[2] : 1;
    g_.in_w = x.dims[x.rank() - 1];
    g_.out_h = two_d ? y.dims[2] : 1;
    g_.out_w = y.dims[y.rank() - 1];
    g_.k_h = two_d ? w.dims[2] : 1;
    g_.k_w = w.dims[w.rank() - 1];
    g_.stride_h = two_d ? at(strides, 0) : 1;
    g_.stride_w = at(strides, 1);
    g_.dil_h = two_d ? at(dilations, 0) : 1;
    g_.dil_w = at(dilations, 1);
    g_.pad_h = two_d ? at(pads, 0) : 0;
    g_.pad_w = at(pads, 1);
    has_bias_ = spec.has_input(2);
    if (w.constant != nullptr) prepare_taps(static_cast<const float*>(w.constant));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* bias = has_bias_ ? static_cast<const float*>(inputs[2]) : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    const float* taps = static_cast<const float*>(inputs[1]);
    std::vector<float> local;
    if (channels_last_) {
      if (taps_.empty()) {  // weights computed by the graph: transpose them for this run
        local = transpose_taps(taps);
        taps = local.data();
      } else {
        taps = taps_.data();
      }
      run_channels_last(x, taps, bias, y);
    } else {
      run_plain(x, taps, bias, y);
    }
  }

 private:
  void prepare_taps(const float* w) {
    if (channels_last_) taps_ = transpose_taps(w);
  }

  // w[c][kh][kw] -> taps[kh][kw][c]
  std::vector<float> transpose_taps(const float* w) const {
    const int64_t C = g_.channels, K = g_.k_h * g_.k_w;
    std::vector<float> taps(static_cast<size_t>(C * K));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < K; ++k) taps[k * C + c] = w[c * K + k];
    return taps;
  }

  void run_channels_last(const float* x, const float* taps, const float* bias, float* y) const {
    const Geometry& g = g_;
    const int64_t C = g.channels, blocks = (C + kBlock - 1) / kBlock;
    const int64_t pixels = g.batch * g.out_h * g.out_w;
    const int64_t work = pixels * C * g.k_h * g.k_w;
#pragma omp parallel for schedule(static) if (work > 65536)
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t n = p / (g.out_h * g.out_w), rest = p % (g.out_h * g.out_w);
      const int64_t oh = rest / g.out_w, ow = rest % g.out_w;
      const float* x_image = x + n * g.in_h * g.in_w * C;
      float* out = y + p * C;
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t c0 = b * kBlock;
        pixel_channels_last(g, x_image, taps, bias, oh, ow, c0, std::min(kBlock, C - c0), out + c0);
      }
    }
  }

  void run_plain(const float* x, const float* taps, const float* bias, float* y) const {
    const Geometry& g = g_;
    const int64_t rows = g.batch * g.channels * g.out_h;
    const int64_t work = rows * g.out_w * g.k_h * g.k_w;
#pragma omp parallel for schedule(static) if (work > 65536)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t plane = r / g.out_h, oh = r % g.out_h, c = plane % g.channels;
      row_plain(g, x + plane * g.in_h * g.in_w, taps + c * g.k_h * g.k_w,
                bias != nullptr ? bias[c] : 0.0f, oh, y + r * g.out_w);
    }
  }

  Geometry g_{};
  bool channels_last_ = false, has_bias_ = false;
  std::vector<float> taps_;
};

}  // namespace

std::unique_ptr<Kernel> make_depthwise_conv(const KernelSpec& spec) {
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& w = spec.inputs[1];
  const TensorInfo& y = spec.outputs[0];
  if (x.rank() != 3 && x.rank() != 4) return nullptr;
  if (spec.attrs.has("post_ops")) return nullptr;  // epilogues stay on oneDNN
  const int64_t channels = x.dims[1];
  if (spec.attrs.get_int("group", 1) != channels || w.dims[0] != channels || w.dims[1] != 1 ||
      y.dims[1] != channels || channels <= 1)
    return nullptr;
  if (w.constant == nullptr && !w.is_contiguous()) return nullptr;
  // a tensor of one pixel is both plain and channels-last: the layouts decide together
  const bool both_last = x.is_channels_last() && y.is_channels_last();
  if (both_last && !(x.is_contiguous() && y.is_contiguous()))
    return std::make_unique<DepthwiseConvKernel>(spec, true);
  if (x.is_contiguous() && y.is_contiguous())
    return std::make_unique<DepthwiseConvKernel>(spec, false);
  return nullptr;
}

}  // namespace graphkiln
