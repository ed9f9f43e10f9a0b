// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Softmax and LogSoftmax of float32 / float16 / bfloat16 data (float32 arithmetic, the output
// of the input's type) seen as [outer, axis, inner] (the lowering computes the three sizes):
// one block per row when inner is 1, else one thread per (outer, inner) column.
#include "gpu/common.hpp"

#include <cstdint>

#include "gpu/block_reduce.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

template <bool kLog, typename T>
__global__ void softmax_rows(const T* x, T* y, int64_t len) {
  const T* row = x + blockIdx.x * len;
  T* out = y + blockIdx.x * len;
  float top = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) top = fmaxf(top, load_float(row[j]));
  top = block_reduce(top, MaxOp());
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += expf(load_float(row[j]) - top);
  sum = block_reduce(sum, SumOp());
  const float log_sum = logf(sum);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float v = load_float(row[j]);
    out[j] = store_float<T>(kLog ? v - top - log_sum : expf(v - top) / sum);
  }
}

template <bool kLog, typename T>
__global__ void softmax_columns(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < outer * inner;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t base = (i / inner) * len * inner + i % inner;
    float top = -INFINITY;
    for (int64_t j = 0; j < len; ++j) top = fmaxf(top, load_float(x[base + j * inner]));
    float sum = 0.f;
    for (int64_t j = 0; j < len; ++j) sum += expf(load_float(x[base + j * inner]) - top);
    const float log_sum = logf(sum);
    for (int64_t j = 0; j < len; ++j) {
      const float v = load_float(x[base + j * inner]);
      y[base + j * inner] = store_float<T>(kLog ? v - top - log_sum : expf(v - top) / sum);
    }
  }
}

template <bool kLog>
class Softmax : public Kernel {
 public:
  explicit Softmax(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    dtype_ = x.dtype;
    if (!is_float_type(dtype_) || spec.outputs.at(0).dtype != dtype_ || !x.is_contiguous())
      spec_error(spec,
                 "needs contiguous float32, float16 or bfloat16 data and a result of its type");
    outer_ = spec.attrs.get_int("outer");
    len_ = spec.attrs.get_int("len");
    inner_ = spec.attrs.get_int("inner");
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (outer_ * len_ * inner_ == 0) return;
    dispatch_float(dtype_, [&](auto t) {
      using T = decltype(t);
      const T* x = static_cast<const T*>(inputs[0]);
      T* y = static_cast<T*>(outputs[0]);
      if (inner_ == 1) {
        int threads = 32;  // a power of two up to kRowThreads, about the row's length
        while (threads < kRowThreads && threads < len_) threads *= 2;
        for (int64_t r = 0; r < outer_; r += 2147483647) {
          const int64_t rows = std::min<int64_t>(outer_ - r, 2147483647);
          softmax_rows<kLog, T><<<static_cast<unsigned>(rows), threads, 0, ctx.stream>>>(
              x + r * len_, y + r * len_, len_);
        }
      } else {
        softmax_columns<kLog, T>
            <<<blocks_for(outer_ * inner_, 256), 256, 0, ctx.stream>>>(x, y, outer_, len_, inner_);
      }
    });
    check_launch("softmax");
  }

 private:
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
  DType dtype_ = DType::f32;
};

}  // namespace

std::unique_ptr<Kernel> make_softmax(const KernelSpec& spec) {
  return std::make_unique<Softmax<false>>(spec);
}
std::unique_ptr<Kernel> make_log_softmax(const KernelSpec& spec) {
  return std::make_unique<Softmax<true>>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
