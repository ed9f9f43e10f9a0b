// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Conv (2-D, f32, NCHW; the lowering views 1-D convolutions as 2-D): depthwise ones run a
// direct kernel; the others im2col into the scratch space and multiply through the BLAS
// interface (a 1x1 stride-1 unpadded convolution multiplies the input directly), then add
// the bias.
#include "gpu/common.hpp"

#include <cstdint>

#include "gpu/blas.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

struct ConvShape {
  int64_t n, c, h, w, m, kh, kw, oh, ow, group;
  int64_t sh, sw, ph, pw, dh, dw;
};

// col[g][ci][ky][kx][oy][ox] for one image
__global__ void im2col(const float* x, float* col, ConvShape s, int64_t total) {
  const int64_t ohw = s.oh * s.ow, khw = s.kh * s.kw;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh;
    const int64_t k = (i / ohw) % khw, channel = i / (ohw * khw);  // channel over all groups
    const int64_t ky = k / s.kw, kx = k % s.kw;
    const int64_t iy = oy * s.sh - s.ph + ky * s.dh, ix = ox * s.sw - s.pw + kx * s.dw;
    col[i] = (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w) ? x[(channel * s.h + iy) * s.w + ix] : 0.f;
  }
}

__global__ void depthwise(const float* x, const float* wt, const float* bias, float* y,
                          ConvShape s, int64_t total) {
  const int64_t per_group = s.m / s.group;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh;
    const int64_t m = (i / (s.ow * s.oh)) % s.m, n = i / (s.ow * s.oh * s.m);
    const int64_t channel = m / per_group;
    const float* xc = x + (n * s.c + channel) * s.h * s.w;
    const float* wm = wt + m * s.kh * s.kw;
    float acc = bias ? bias[m] : 0.f;
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t iy = oy * s.sh - s.ph + ky * s.dh;
      if (iy < 0 || iy >= s.h) continue;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = ox * s.sw - s.pw + kx * s.dw;
        if (ix >= 0 && ix < s.w) acc += xc[iy * s.w + ix] * wm[ky * s.kw + kx];
      }
    }
    y[i] = acc;
  }
}

__global__ void add_channel_bias(float* y, const float* bias, int64_t m, int64_t hw, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] += bias[(i / hw) % m];
}

class Conv : public Kernel {
 public:
  explicit Conv(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    const TensorInfo& w = spec.inputs.at(1);
    const TensorInfo& y = spec.outputs.at(0);
    if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4) spec_error(spec, "needs 4-D tensors");
    if (x.dtype != DType::f32 || !x.is_contiguous() || !y.is_contiguous())
      spec_error(spec, "needs contiguous float32 NCHW data");
    has_bias_ = spec.has_input(2);
    const std::vector<int64_t> pads = spec.attrs.get_ints("pads");
    const std::vector<int64_t> strides = spec.attrs.get_ints("strides");
    const std::vector<int64_t> dilations = spec.attrs.get_ints("dilations");
    if (pads.size() != 4 || strides.size() != 2 || dilations.size() != 2)
      spec_error(spec, "expects 2-D pads, strides and dilations");
    s_ = ConvShape{x.dims[0], x.dims[1], x.dims[2], x.dims[3], w.dims[0], w.dims[2], w.dims[3],
                   y.dims[2], y.dims[3], spec.attrs.get_int("group", 1), strides[0], strides[1],
                   pads[0], pads[1], dilations[0], dilations[1]};
    if (s_.c % s_.group || s_.m % s_.group || w.dims[1] != s_.c / s_.group)
      spec_error(spec, "channels do not match the group count");
    depthwise_ = s_.group == s_.c && w.dims[1] == 1 && s_.group > 1;
    pointwise_ = s_.kh == 1 && s_.kw == 1 && s_.sh == 1 && s_.sw == 1 && s_.ph == 0 &&
                 s_.pw == 0 && pads[2] == 0 && pads[3] == 0;
  }

  size_t workspace_bytes() const override {
    if (depthwise_ || pointwise_) return 0;
    return static_cast<size_t>(s_.c * s_.kh * s_.kw * s_.oh * s_.ow) * sizeof(float);
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* w = static_cast<const float*>(inputs[1]);
    const float* bias = has_bias_ ? static_cast<const float*>(inputs[2]) : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    const int64_t ohw = s_.oh * s_.ow, total = s_.n * s_.m * ohw;
    if (total == 0) return;
    if (depthwise_) {
      depthwise<<<blocks_for(total, 256), 256, 0, ctx.stream>>>(x, w, bias, y, s_, total);
      check_launch("depthwise");
      return;
    }
    const int64_t mg = s_.m / s_.group, cg = s_.c / s_.group, kc = cg * s_.kh * s_.kw;
    GemmArgs g;
    g.m = mg;
    g.n = ohw;
    g.k = kc;
    g.lda = kc;
    g.ldb = ohw;
    g.ldc = ohw;
    g.a = w;
    g.stride_a = mg * kc;
    g.stride_b = kc * ohw;
    g.stride_c = mg * ohw;
    g.batch = s_.group;
    if (pointwise_ && s_.group == 1) {  // all images in one batched product
      g.stride_a = 0;
      g.stride_b = s_.c * ohw;
      g.stride_c = s_.m * ohw;
      g.batch = s_.n;
      g.b = x;
      g.c = y;
      ctx.blas->sgemm(g);
    } else {
      for (int64_t n = 0; n < s_.n; ++n) {
        const float* xn = x + n * s_.c * s_.h * s_.w;
        if (pointwise_) {
          g.b = xn;
        } else {
          float* col = static_cast<float*>(ctx.workspace);
          const int64_t cols = s_.c * s_.kh * s_.kw * ohw;
          im2col<<<blocks_for(cols, 256), 256, 0, ctx.stream>>>(xn, col, s_, cols);
          check_launch("im2col");
          g.b = col;
        }
        g.c = y + n * s_.m * ohw;
        ctx.blas->sgemm(g);
      }
    }
    if (bias) {
      add_channel_bias<<<blocks_for(total, 256), 256, 0, ctx.stream>>>(y, bias, s_.m, ohw, total);
      check_launch("add_channel_bias");
    }
  }

 private:
  ConvShape s_{};
  bool has_bias_ = false, depthwise_ = false, pointwise_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelSpec& spec) { return std::make_unique<Conv>(spec); }

}  // namespace gpu
}  // namespace graphkiln
