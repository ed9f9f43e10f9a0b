// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// CumSum along one axis, exclusive / reverse; sums in the element type in index order, like
// numpy's cumsum (bit-exact with the ref target). Attr prod=1: CumProd (products, numpy's
// cumprod order). The axis is the "axis" attribute
// (normalized by the lowering) or, when the attribute is absent, the i32/i64 axis input
// read at run time (an axis out of range then throws before any parallel loop).
#include <stdexcept>
#include <string>

#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

template <typename T, bool Prod>
inline T combine(T a, T b) {
  if constexpr (Prod && std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wraps like numpy, no signed-overflow UB
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else if constexpr (Prod) {
    return a * b;
  } else {
    return a + b;
  }
}

template <typename T, bool Prod>
class CumSumKernel : public Kernel {
 public:
  CumSumKernel(const KernelSpec& spec, int axis)
      : exclusive_(spec.attrs.get_int("exclusive", 0) != 0),
        reverse_(spec.attrs.get_int("reverse", 0) != 0), dims_(spec.inputs[0].dims),
        runtime_axis_(axis < 0),
        axis64_(spec.inputs.size() > 1 && spec.inputs[1].dtype == DType::i64), name_(spec.name) {
    if (!runtime_axis_) set_axis(axis);
  }
  void run(const void* const* inputs, void* const* outputs) override {
    if (runtime_axis_) {
      int64_t axis = axis64_ ? *static_cast<const int64_t*>(inputs[1])
                             : *static_cast<const int32_t*>(inputs[1]);
      const int64_t rank = std::max<int64_t>(static_cast<int64_t>(dims_.size()), 1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank)
        throw std::out_of_range("CumSum '" + name_ + "': axis out of range");
      set_axis(dims_.empty() ? 0 : static_cast<int>(axis));
    }
    const T* x = static_cast<const T*>(inputs[0]);
    T* y = static_cast<T*>(outputs[0]);
    const int64_t n = n_, inner = inner_;
    const int64_t step = reverse_ ? -inner : inner;
#pragma omp parallel for schedule(static) if (outer_ * n * inner > 32768)
    for (int64_t o = 0; o < outer_; ++o) {
      const int64_t first = o * n * inner + (reverse_ ? (n - 1) * inner : 0);
      const T* xs = x + first;
      T* ys = y + first;
      if (n == 0) continue;
      if (exclusive_) {
        for (int64_t i = 0; i < inner; ++i) ys[i] = Prod ? T(1) : T(0);
        for (int64_t j = 1; j < n; ++j) {
          T* yj = ys + j * step;
          const T* prev = ys + (j - 1) * step;
          const T* xp = xs + (j - 1) * step;
          for (int64_t i = 0; i < inner; ++i) yj[i] = combine<T, Prod>(prev[i], xp[i]);
        }
      } else {
        for (int64_t i = 0; i < inner; ++i) ys[i] = xs[i];
        for (int64_t j = 1; j < n; ++j) {
          T* yj = ys + j * step;
          const T* prev = ys + (j - 1) * step;
          const T* xj = xs + j * step;
          for (int64_t i = 0; i < inner; ++i) yj[i] = combine<T, Prod>(prev[i], xj[i]);
        }
      }
    }
  }

 private:
  void set_axis(int axis) {
    outer_ = inner_ = 1;
    for (int i = 0; i < axis; ++i) outer_ *= dims_[i];
    for (size_t i = axis + 1; i < dims_.size(); ++i) inner_ *= dims_[i];
    n_ = dims_.empty() ? 1 : dims_[axis];
  }

  bool exclusive_, reverse_;
  std::vector<int64_t> dims_;
  bool runtime_axis_, axis64_;
  std::string name_;
  int64_t outer_ = 1, inner_ = 1, n_ = 1;
};

template <bool Prod>
std::unique_ptr<Kernel> make_typed(const KernelSpec& spec, int a) {
  switch (spec.inputs[0].dtype) {
    case DType::f32: return std::make_unique<CumSumKernel<float, Prod>>(spec, a);
    case DType::f64: return std::make_unique<CumSumKernel<double, Prod>>(spec, a);
    case DType::i32: return std::make_unique<CumSumKernel<int32_t, Prod>>(spec, a);
    case DType::i64: return std::make_unique<CumSumKernel<int64_t, Prod>>(spec, a);
    case DType::u32: return std::make_unique<CumSumKernel<uint32_t, Prod>>(spec, a);
    case DType::u64: return std::make_unique<CumSumKernel<uint64_t, Prod>>(spec, a);
    default: spec_error(spec, "dtype not supported");
  }
}

std::unique_ptr<Kernel> make_cumsum(const KernelSpec& spec) {
  if (spec.outputs.size() != 1 || spec.inputs.empty()) spec_error(spec, "takes x, axis");
  const TensorInfo& x = spec.inputs[0];
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain only");
  int a = -1;  // read at run time
  if (spec.attrs.has("axis")) {
    int64_t axis = spec.attrs.get_int("axis");
    const int rank = std::max(x.rank(), 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) spec_error(spec, "axis out of range");
    a = x.rank() == 0 ? 0 : static_cast<int>(axis);
  } else if (!spec.has_input(1) ||
             (spec.inputs[1].dtype != DType::i64 && spec.inputs[1].dtype != DType::i32)) {
    spec_error(spec, "needs an axis attribute or an i32/i64 axis input");
  }
  if (spec.attrs.get_int("prod", 0) != 0) return make_typed<true>(spec, a);
  return make_typed<false>(spec, a);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("CumSum", make_cumsum);

}  // namespace graphkiln
