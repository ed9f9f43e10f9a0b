// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Conv (2-D, NCHW; the lowering views 1-D convolutions as 2-D) in float32, float16 or
// bfloat16 (float32 accumulation, one rounding per output). Depthwise convolutions run a
// direct kernel. The others multiply through the BLAS interface with the bias folded in:
// the output is first filled with the broadcast bias and the product accumulates onto it
// (beta = 1). A 1x1 stride-1 unpadded convolution multiplies the input directly (all images
// in one batched product); any other im2cols a chunk of images at a time into the scratch
// space (as many as fit in kWorkspaceCap, at least one) and multiplies the chunk in one
// batched product (one per image and group when grouped).
#include "gpu/common.hpp"

#include <algorithm>
#include <cstdint>

#include "gpu/blas.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

constexpr size_t kWorkspaceCap = size_t{256} << 20;

struct ConvShape {
  int64_t n, c, h, w, m, kh, kw, oh, ow, group;
  int64_t sh, sw, ph, pw, dh, dw;
};

// col[image][channel][ky][kx][oy][ox] for a chunk of images from x (zero where padded); I is
// the index type: 32-bit whenever the chunk's col has fewer than 2^31 elements (int64
// division is several times slower on GPUs)
template <typename T, typename I>
__global__ void im2col(const T* x, T* col, ConvShape s, I total) {
  const I ow = static_cast<I>(s.ow), oh = static_cast<I>(s.oh), kw = static_cast<I>(s.kw),
          kh = static_cast<I>(s.kh), h = static_cast<I>(s.h), w = static_cast<I>(s.w);
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    I t = i / ow;
    const I ox = i - t * ow;
    I u = t / oh;
    const I oy = t - u * oh;
    t = u / kw;
    const I kx = u - t * kw;
    const I plane = t / kh, ky = t - plane * kh;  // plane: image * c + channel
    const int64_t iy = static_cast<int64_t>(oy) * s.sh - s.ph + static_cast<int64_t>(ky) * s.dh;
    const int64_t ix = static_cast<int64_t>(ox) * s.sw - s.pw + static_cast<int64_t>(kx) * s.dw;
    col[i] = (iy >= 0 && iy < h && ix >= 0 && ix < w)
                 ? x[(static_cast<int64_t>(plane) * h + iy) * w + ix] : T{};
  }
}

template <typename T>
__global__ void depthwise(const T* x, const T* wt, const T* bias, T* y, ConvShape s,
                          int64_t total) {
  const int64_t per_group = s.m / s.group;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ox = i % s.ow, oy = (i / s.ow) % s.oh;
    const int64_t m = (i / (s.ow * s.oh)) % s.m, n = i / (s.ow * s.oh * s.m);
    const int64_t channel = m / per_group;
    const T* xc = x + (n * s.c + channel) * s.h * s.w;
    const T* wm = wt + m * s.kh * s.kw;
    float acc = 0.f;
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t iy = oy * s.sh - s.ph + ky * s.dh;
      if (iy < 0 || iy >= s.h) continue;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = ox * s.sw - s.pw + kx * s.dw;
        if (ix >= 0 && ix < s.w) acc += load_float(xc[iy * s.w + ix]) * load_float(wm[ky * s.kw + kx]);
      }
    }
    y[i] = store_float<T>(bias ? acc + load_float(bias[m]) : acc);
  }
}

// y[n][m][hw] = bias[m]: the product then accumulates onto it
template <typename T>
__global__ void fill_channel_bias(T* y, const T* bias, int64_t m, int64_t hw, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = bias[(i / hw) % m];
}

class Conv : public Kernel {
 public:
  explicit Conv(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    const TensorInfo& w = spec.inputs.at(1);
    const TensorInfo& y = spec.outputs.at(0);
    if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4) spec_error(spec, "needs 4-D tensors");
    dtype_ = x.dtype;
    has_bias_ = spec.has_input(2);
    if (!is_float_type(dtype_) || w.dtype != dtype_ || y.dtype != dtype_ ||
        (has_bias_ && spec.inputs.at(2).dtype != dtype_))
      spec_error(spec, "needs float32, float16 or bfloat16 data, weights and bias of one type");
    if (!x.is_contiguous() || !w.is_contiguous() || !y.is_contiguous())
      spec_error(spec, "needs contiguous NCHW data");
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
    fast_math_ = spec.attrs.get_int("fast_math", 0) != 0;
    depthwise_ = s_.group == s_.c && w.dims[1] == 1 && s_.group > 1;
    pointwise_ = s_.kh == 1 && s_.kw == 1 && s_.sh == 1 && s_.sw == 1 && s_.ph == 0 &&
                 s_.pw == 0 && pads[2] == 0 && pads[3] == 0;
    const size_t image_bytes =
        static_cast<size_t>(s_.c * s_.kh * s_.kw * s_.oh * s_.ow) * dtype_size(dtype_);
    chunk_ = image_bytes == 0 ? 1 : std::max<int64_t>(1, std::min<int64_t>(
                                        s_.n, static_cast<int64_t>(kWorkspaceCap / image_bytes)));
    col_bytes_ = (depthwise_ || pointwise_) ? 0 : image_bytes * static_cast<size_t>(chunk_);
  }

  size_t workspace_bytes() const override { return col_bytes_; }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) override {
    dispatch_float(dtype_, [&](auto t) {
      using T = decltype(t);
      go(static_cast<const T*>(inputs[0]), static_cast<const T*>(inputs[1]),
         static_cast<const T*>(inputs[2]), static_cast<T*>(outputs[0]), ctx);
    });
  }

 private:
  template <typename T>
  void go(const T* x, const T* w, const T* bias, T* y, Context& ctx) {
    if (!has_bias_) bias = nullptr;
    const int64_t ohw = s_.oh * s_.ow, total = s_.n * s_.m * ohw;
    if (total == 0) return;
    if (depthwise_) {
      depthwise<T><<<blocks_for(total, 256), 256, 0, ctx.stream>>>(x, w, bias, y, s_, total);
      check_launch("depthwise");
      return;
    }
    const int64_t mg = s_.m / s_.group, cg = s_.c / s_.group, kc = cg * s_.kh * s_.kw;
    GemmArgs g;
    g.ab_type = g.c_type = dtype_;
    g.tf32 = fast_math_;
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
    if (bias) {
      fill_channel_bias<T><<<blocks_for(total, 256), 256, 0, ctx.stream>>>(y, bias, s_.m, ohw, total);
      check_launch("fill_channel_bias");
      g.beta = 1.f;
    }
    const int64_t image_in = s_.c * s_.h * s_.w, image_out = s_.m * ohw;
    if (pointwise_) {
      if (s_.group == 1) {  // all images in one batched product
        g.stride_a = 0;
        g.stride_b = image_in;
        g.stride_c = image_out;
        g.batch = s_.n;
        g.b = x;
        g.c = y;
        ctx.blas->gemm(g);
        return;
      }
      for (int64_t n = 0; n < s_.n; ++n) {
        g.b = x + n * image_in;
        g.c = y + n * image_out;
        ctx.blas->gemm(g);
      }
      return;
    }
    T* col = static_cast<T*>(ctx.workspace);
    const int64_t image_col = s_.c * s_.kh * s_.kw * ohw;
    for (int64_t n0 = 0; n0 < s_.n; n0 += chunk_) {
      const int64_t count = std::min(chunk_, s_.n - n0), cols = count * image_col;
      if (cols < (int64_t{1} << 31))
        im2col<T, uint32_t><<<blocks_for(cols, 256), 256, 0, ctx.stream>>>(
            x + n0 * image_in, col, s_, static_cast<uint32_t>(cols));
      else
        im2col<T, int64_t><<<blocks_for(cols, 256), 256, 0, ctx.stream>>>(x + n0 * image_in, col, s_, cols);
      check_launch("im2col");
      if (s_.group == 1) {  // the chunk's images in one batched product
        g.stride_a = 0;
        g.stride_b = image_col;
        g.stride_c = image_out;
        g.batch = count;
        g.b = col;
        g.c = y + n0 * image_out;
        ctx.blas->gemm(g);
        continue;
      }
      for (int64_t i = 0; i < count; ++i) {
        g.b = col + i * image_col;
        g.c = y + (n0 + i) * image_out;
        ctx.blas->gemm(g);
      }
    }
  }

  ConvShape s_{};
  DType dtype_ = DType::f32;
  int64_t chunk_ = 1;
  size_t col_bytes_ = 0;
  bool has_bias_ = false, depthwise_ = false, pointwise_ = false, fast_math_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelSpec& spec) { return std::make_unique<Conv>(spec); }

}  // namespace gpu
}  // namespace graphkiln
