// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "NegativeLogLikelihoodLoss": x (f32 / f64) seen as [n, c, inner], target (i32 / i64) as
// [n, inner], optional weight [c]; attrs reduction ("none", "sum", "mean"), has_ignore,
// ignore_index. loss[n, d] = -x[n, t, d] * w[t] (0 where t is the ignore index; a class out
// of range reads nothing and counts 0 too); "sum" and "mean" (divided by the kept weights)
// give one value, summed in double by one block. SoftmaxCrossEntropyLoss lowers to
// LogSoftmax and this kernel.
#include "gpu/common.hpp"

#include <cstdint>
#include <string>

#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

constexpr int kLossThreads = 256;

struct LossArgs {
  int64_t n, c, inner;
  int64_t ignore_index;
  int has_ignore;
};

template <typename T, typename I>
__device__ inline void loss_at(const T* x, const I* target, const T* weight, const LossArgs& a,
                               int64_t i, double& loss, double& w) {
  const int64_t d = i % a.inner, b = i / a.inner;
  const int64_t t = static_cast<int64_t>(target[i]);
  if ((a.has_ignore && t == a.ignore_index) || t < 0 || t >= a.c) {
    loss = 0.0;
    w = 0.0;
    return;
  }
  w = weight ? static_cast<double>(weight[t]) : 1.0;
  loss = -static_cast<double>(x[(b * a.c + t) * a.inner + d]) * w;
}

template <typename T, typename I>
__global__ void nll_none(const T* x, const I* target, const T* weight, T* y, LossArgs a) {
  const int64_t n = a.n * a.inner;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double loss, w;
    loss_at(x, target, weight, a, i, loss, w);
    y[i] = static_cast<T>(loss);
  }
}

template <typename T, typename I>
__global__ void nll_reduce(const T* x, const I* target, const T* weight, T* y, LossArgs a,
                           int mean) {
  __shared__ double sums[kLossThreads], weights[kLossThreads];
  double s = 0.0, ws = 0.0;
  const int64_t n = a.n * a.inner;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    double loss, w;
    loss_at(x, target, weight, a, i, loss, w);
    s += loss;
    ws += w;
  }
  sums[threadIdx.x] = s;
  weights[threadIdx.x] = ws;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      sums[threadIdx.x] += sums[threadIdx.x + half];
      weights[threadIdx.x] += weights[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) y[0] = static_cast<T>(mean ? sums[0] / weights[0] : sums[0]);
}

class NllLoss : public Kernel {
 public:
  explicit NllLoss(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    const TensorInfo& t = spec.inputs.at(1);
    if (x.rank() < 2 || !x.is_contiguous() || !t.is_contiguous() ||
        !spec.outputs.at(0).is_contiguous())
      spec_error(spec, "needs plain x of rank >= 2 and plain target");
    if (x.dtype != DType::f32 && x.dtype != DType::f64)
      spec_error(spec, "x must be float32 or float64");
    if (t.dtype != DType::i32 && t.dtype != DType::i64)
      spec_error(spec, "target must be int32 or int64");
    has_weight_ = spec.has_input(2);
    if (has_weight_ && (spec.inputs[2].dtype != x.dtype || spec.inputs[2].numel() != x.dims[1]))
      spec_error(spec, "weight must be [C] of x's dtype");
    args_.n = x.dims[0];
    args_.c = x.dims[1];
    args_.inner = x.numel() / (args_.n * args_.c > 0 ? args_.n * args_.c : 1);
    if (t.numel() != args_.n * args_.inner) spec_error(spec, "target does not match x");
    args_.has_ignore = static_cast<int>(spec.attrs.get_int("has_ignore", 0));
    args_.ignore_index = spec.attrs.get_int("ignore_index", 0);
    const std::string r = spec.attrs.get_str("reduction", "mean");
    if (r == "none") mode_ = 0;
    else if (r == "sum") mode_ = 1;
    else if (r == "mean") mode_ = 2;
    else spec_error(spec, "unknown reduction " + r);
    f64_ = x.dtype == DType::f64;
    wide_ = t.dtype == DType::i64;
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (f64_) pick<double>(inputs, outputs, ctx);
    else pick<float>(inputs, outputs, ctx);
    check_launch("nll_loss");
  }

 private:
  template <typename T>
  void pick(const void* const* inputs, void* const* outputs, Context& ctx) const {
    if (wide_) go<T, int64_t>(inputs, outputs, ctx);
    else go<T, int32_t>(inputs, outputs, ctx);
  }
  template <typename T, typename I>
  void go(const void* const* inputs, void* const* outputs, Context& ctx) const {
    const T* x = static_cast<const T*>(inputs[0]);
    const I* t = static_cast<const I*>(inputs[1]);
    const T* w = has_weight_ ? static_cast<const T*>(inputs[2]) : nullptr;
    T* y = static_cast<T*>(outputs[0]);
    const int64_t n = args_.n * args_.inner;
    if (mode_ == 0) {
      if (n > 0) nll_none<T, I><<<blocks_for(n, 256), 256, 0, ctx.stream>>>(x, t, w, y, args_);
    } else {
      nll_reduce<T, I><<<1, kLossThreads, 0, ctx.stream>>>(x, t, w, y, args_, mode_ == 2);
    }
  }
  LossArgs args_{};
  int mode_ = 2;
  bool has_weight_ = false, f64_ = false, wide_ = true;
};

}  // namespace

std::unique_ptr<Kernel> make_nll_loss(const KernelSpec& spec) {
  return std::make_unique<NllLoss>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
