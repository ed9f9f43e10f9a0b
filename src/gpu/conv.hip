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
#include "gpu/fast_div.hpp"
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

// col[image][channel][ky][kx][oy][ox] for a chunk of images from x (zero where padded). Each
// (image, channel, ky, kx) row of col belongs to one threadIdx.y of a block (several rows a
// block when rows are short): its coordinates are worked out once, the x threads then walk
// its oh * ow contiguous elements (one fast division each).
template <typename T>
__global__ void im2col(const T* x, T* col, ConvShape s, FastDiv ow, int64_t rows) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (r >= rows) return;  // r = (image * c + channel) * kh * kw + ky * kw + kx
  const int64_t khw = s.kh * s.kw, plane = r / khw, k = r - plane * khw;
  const int64_t ky = k / s.kw, kx = k - ky * s.kw;
  const uint32_t ohw = static_cast<uint32_t>(s.oh * s.ow);
  const int32_t h = static_cast<int32_t>(s.h), w = static_cast<int32_t>(s.w);
  const int32_t y0 = static_cast<int32_t>(ky * s.dh - s.ph),
                x0 = static_cast<int32_t>(kx * s.dw - s.pw);
  const int32_t sh = static_cast<int32_t>(s.sh), sw = static_cast<int32_t>(s.sw);
  const T* src = x + plane * s.h * s.w;
  T* dst = col + r * static_cast<int64_t>(ohw);
  for (uint32_t p = threadIdx.x; p < ohw; p += blockDim.x) {
    const uint32_t oy = ow.div(p), ox = p - oy * ow.d;
    const int32_t iy = y0 + static_cast<int32_t>(oy) * sh, ix = x0 + static_cast<int32_t>(ox) * sw;
    dst[p] = (iy >= 0 && iy < h && ix >= 0 && ix < w) ? src[iy * w + ix] : T{};
  }
}

// threads for a row of n elements: a power of two from 32 to 256
inline int row_threads(int64_t n) {
  int t = 32;
  while (t < 256 && t < n) t *= 2;
  return t;
}

// im2col's block: row_threads(row length) x threads, enough rows for 256 threads
inline dim3 im2col_block(int64_t row) {
  const int tx = row_threads(row);
  return dim3(static_cast<unsigned>(tx), static_cast<unsigned>(256 / tx));
}

// one thread per output; 32-bit fast index math (the caller keeps the output under 2^31
// elements)
template <typename T>
__global__ void depthwise(const T* x, const T* wt, const T* bias, T* y, ConvShape s, FastDiv ow,
                          FastDiv oh, FastDiv channels, uint32_t total) {
  const int64_t per_group = s.m / s.group;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const uint32_t row = ow.div(i), plane = oh.div(row), n = channels.div(plane);
    const int64_t ox = i - row * ow.d, oy = row - plane * oh.d, m = plane - n * channels.d;
    const int64_t channel = m / per_group;
    const T* xc = x + (n * s.c + channel) * s.h * s.w;
    const T* wm = wt + m * s.kh * s.kw;
    float acc = 0.f;
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t iy = oy * s.sh - s.ph + ky * s.dh;
      if (iy < 0 || iy >= s.h) continue;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = ox * s.sw - s.pw + kx * s.dw;
        if (ix >= 0 && ix < s.w)
          acc += load_float(xc[iy * s.w + ix]) * load_float(wm[ky * s.kw + kx]);
      }
    }
    y[i] = store_float<T>(bias ? acc + load_float(bias[m]) : acc);
  }
}

// y[n][m][hw] = bias[m]: the product then accumulates onto it. One block per (n, m) plane.
template <typename T>
__global__ void fill_channel_bias(T* y, const T* bias, int64_t m, int64_t hw) {
  const int64_t plane = blockIdx.x;
  const T value = bias[plane % m];
  T* out = y + plane * hw;
  for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) out[i] = value;
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
    s_ = ConvShape{x.dims[0],   x.dims[1],  x.dims[2], x.dims[3], w.dims[0],
                   w.dims[2],   w.dims[3],  y.dims[2], y.dims[3], spec.attrs.get_int("group", 1),
                   strides[0],  strides[1], pads[0],   pads[1],   dilations[0],
                   dilations[1]};
    if (s_.c % s_.group || s_.m % s_.group || w.dims[1] != s_.c / s_.group)
      spec_error(spec, "channels do not match the group count");
    fast_math_ = spec.attrs.get_int("fast_math", 0) != 0;
    depthwise_ = s_.group == s_.c && w.dims[1] == 1 && s_.group > 1;
    pointwise_ = s_.kh == 1 && s_.kw == 1 && s_.sh == 1 && s_.sw == 1 && s_.ph == 0 && s_.pw == 0 &&
                 pads[2] == 0 && pads[3] == 0;
    const size_t image_bytes =
        static_cast<size_t>(s_.c * s_.kh * s_.kw * s_.oh * s_.ow) * dtype_size(dtype_);
    chunk_ =
        image_bytes == 0
            ? 1
            : std::max<int64_t>(
                  1, std::min<int64_t>(s_.n, static_cast<int64_t>(kWorkspaceCap / image_bytes)));
    const int64_t image_col = s_.c * s_.kh * s_.kw * s_.oh * s_.ow;
    if (!depthwise_ && !pointwise_ && image_col >= (int64_t{1} << 31))
      spec_error(spec, "one image's im2col matrix exceeds 2^31 elements");
    if (chunk_ * s_.c * s_.kh * s_.kw >= (int64_t{1} << 31))
      spec_error(spec, "more than 2^31 im2col rows in a chunk");
    ow_div_ = FastDiv(static_cast<uint32_t>(std::max<int64_t>(1, s_.ow)));
    if (s_.n * s_.m >= (int64_t{1} << 31) || s_.oh * s_.ow >= (int64_t{1} << 31) ||
        s_.h * s_.w >= (int64_t{1} << 31) || (depthwise_ && y.numel() >= (int64_t{1} << 31)))
      spec_error(spec,
                 "more than 2^31 output planes or elements in a plane (or outputs of a "
                 "depthwise convolution)");
    col_bytes_ = (depthwise_ || pointwise_) ? 0 : image_bytes * static_cast<size_t>(chunk_);
  }

  size_t workspace_bytes() const override { return col_bytes_; }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    dispatch_float(dtype_, [&](auto t) {
      using T = decltype(t);
      go(static_cast<const T*>(inputs[0]), static_cast<const T*>(inputs[1]),
         static_cast<const T*>(inputs[2]), static_cast<T*>(outputs[0]), ctx);
    });
  }

 private:
  template <typename T>
  void go(const T* x, const T* w, const T* bias, T* y, Context& ctx) const {
    if (!has_bias_) bias = nullptr;
    const int64_t ohw = s_.oh * s_.ow, total = s_.n * s_.m * ohw;
    if (total == 0) return;
    if (depthwise_) {
      depthwise<T><<<blocks_for(total, 256), 256, 0, ctx.stream>>>(
          x, w, bias, y, s_, ow_div_, FastDiv(static_cast<uint32_t>(s_.oh)),
          FastDiv(static_cast<uint32_t>(s_.m)), static_cast<uint32_t>(total));
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
      fill_channel_bias<T><<<static_cast<unsigned>(s_.n * s_.m), row_threads(ohw), 0, ctx.stream>>>(
          y, bias, s_.m, ohw);
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
      const int64_t count = std::min(chunk_, s_.n - n0);
      const int64_t rows = count * s_.c * s_.kh * s_.kw;
      const dim3 block = im2col_block(ohw);
      im2col<T><<<static_cast<unsigned>((rows + block.y - 1) / block.y), block, 0, ctx.stream>>>(
          x + n0 * image_in, col, s_, ow_div_, rows);
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
  FastDiv ow_div_{};
  DType dtype_ = DType::f32;
  int64_t chunk_ = 1;
  size_t col_bytes_ = 0;
  bool has_bias_ = false, depthwise_ = false, pointwise_ = false, fast_math_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelSpec& spec) { return std::make_unique<Conv>(spec); }

}  // namespace gpu
}  // namespace graphkiln
