// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// MaxPool and AveragePool over the two spatial dims of NCHW data (the lowering views 1-D
// pooling as 2-D), one thread per output element, float32 / float16 / bfloat16 (float
// arithmetic, one rounding per output). The output dims come from the IR.
#include "gpu/common.hpp"

#include <algorithm>
#include <cstdint>

#include "gpu/fast_div.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

struct PoolShape {
  int64_t nc, h, w, oh, ow, kh, kw, sh, sw, ph0, pw0, ph1, pw1, dh, dw;
  int include_pad;
};

// I: the index type (uint32_t with fast divisions when the output has fewer than 2^31
// elements, else int64_t)
template <bool kMax, typename T, typename I>
__global__ void pool2d(const T* x, T* y, PoolShape s, FastDiv ow, FastDiv oh, I total) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    int64_t ox, oy, plane;
    if constexpr (sizeof(I) == 4) {
      const uint32_t row = ow.div(i), p = oh.div(row);
      ox = i - row * ow.d;
      oy = row - p * oh.d;
      plane = p;
    } else {
      ox = i % s.ow;
      oy = (i / s.ow) % s.oh;
      plane = i / (s.ow * s.oh);
    }
    const T* xp = x + plane * s.h * s.w;
    float acc = kMax ? -INFINITY : 0.f;
    int64_t count = 0;
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t iy = oy * s.sh - s.ph0 + ky * s.dh;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = ox * s.sw - s.pw0 + kx * s.dw;
        const bool inside = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w;
        if (inside) {
          const float v = load_float(xp[iy * s.w + ix]);
          acc = kMax ? (v > acc || isnan(v) ? v : acc) : acc + v;
          ++count;
        } else if (!kMax && s.include_pad && iy < s.h + s.ph1 && ix < s.w + s.pw1) {
          ++count;  // padding inside the padded bounds counts toward the divisor
        }
      }
    }
    y[i] = store_float<T>(kMax ? acc : (count ? acc / static_cast<float>(count) : 0.f));
  }
}

template <bool kMax>
class Pool : public Kernel {
 public:
  explicit Pool(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    const TensorInfo& y = spec.outputs.at(0);
    if (x.rank() != 4 || y.rank() != 4 || !is_float_type(x.dtype) || y.dtype != x.dtype ||
        !x.is_contiguous())
      spec_error(spec, "needs contiguous 4-D float32, float16 or bfloat16 data");
    dtype_ = x.dtype;
    const auto k = spec.attrs.get_ints("kernel_shape");
    const auto st = spec.attrs.get_ints("strides");
    const auto p = spec.attrs.get_ints("pads");
    const auto d = spec.attrs.get_ints("dilations");
    if (k.size() != 2 || st.size() != 2 || p.size() != 4 || d.size() != 2)
      spec_error(spec, "expects 2-D kernel_shape, strides, pads and dilations");
    s_ = PoolShape{x.dims[0] * x.dims[1],
                   x.dims[2],
                   x.dims[3],
                   y.dims[2],
                   y.dims[3],
                   k[0],
                   k[1],
                   st[0],
                   st[1],
                   p[0],
                   p[1],
                   p[2],
                   p[3],
                   d[0],
                   d[1],
                   static_cast<int>(spec.attrs.get_int("count_include_pad", 0))};
    total_ = y.numel();
    ow_ = FastDiv(static_cast<uint32_t>(std::max<int64_t>(1, std::min<int64_t>(s_.ow, INT32_MAX))));
    oh_ = FastDiv(static_cast<uint32_t>(std::max<int64_t>(1, std::min<int64_t>(s_.oh, INT32_MAX))));
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (total_ == 0) return;
    dispatch_float(dtype_, [&](auto t) {
      using T = decltype(t);
      const T* x = static_cast<const T*>(inputs[0]);
      T* y = static_cast<T*>(outputs[0]);
      if (total_ < (int64_t{1} << 31))
        pool2d<kMax, T, uint32_t><<<blocks_for(total_, 256), 256, 0, ctx.stream>>>(
            x, y, s_, ow_, oh_, static_cast<uint32_t>(total_));
      else
        pool2d<kMax, T, int64_t>
            <<<blocks_for(total_, 256), 256, 0, ctx.stream>>>(x, y, s_, ow_, oh_, total_);
    });
    check_launch("pool2d");
  }

 private:
  PoolShape s_{};
  DType dtype_ = DType::f32;
  FastDiv ow_{}, oh_{};
  int64_t total_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_max_pool(const KernelSpec& spec) {
  return std::make_unique<Pool<true>>(spec);
}
std::unique_ptr<Kernel> make_average_pool(const KernelSpec& spec) {
  return std::make_unique<Pool<false>>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
