// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Ops along one axis of plain data viewed as [outer, n, inner]:
//   "TopK" (attrs axis, largest; outputs Values, Indices (int64); k = Values' dim on the
//     axis; always sorted, ties in increasing index order, NaN counts as the largest value,
//     as ref does; float32, float64, int32, int64, uint64, ...),
//   "Hardmax" (attr axis; 1 at the first maximum (a NaN wins), 0 elsewhere; float32 / f64),
//   "LpNormalization" (attrs axis, p in {1, 2}; x / norm, zeros where the norm is 0;
//     float32 / float64).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 16384;

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView axis_view(const KernelSpec& spec, const TensorInfo& t) {
  const int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0 || axis >= t.rank()) spec_error(spec, "axis out of range");
  AxisView v;
  for (int64_t d = 0; d < axis; ++d) v.outer *= t.dims[d];
  v.n = t.dims[axis];
  for (int64_t d = axis + 1; d < t.rank(); ++d) v.inner *= t.dims[d];
  return v;
}

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  return false;
}

// strict "a comes after b in ascending order", NaN the largest
template <typename T>
inline bool greater(T a, T b) {
  if (is_nan(b)) return false;
  if (is_nan(a)) return true;
  return a > b;
}

template <typename T>
class TopKKernel : public Kernel {
 public:
  TopKKernel(AxisView v, int64_t k, bool largest) : v_(v), k_(k), largest_(largest) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    T* vals = static_cast<T*>(outputs[0]);
    int64_t* idx = static_cast<int64_t*>(outputs[1]);
    const AxisView v = v_;
    const int64_t k = k_, lanes = v.outer * v.inner;
    const bool largest = largest_;
    if (k == 0) return;
#pragma omp parallel if (lanes * v.n > kParallelWork)
    {
      std::vector<std::pair<T, int64_t>> buf(v.n);
#pragma omp for schedule(static)
      for (int64_t lane = 0; lane < lanes; ++lane) {
        const int64_t o = lane / v.inner, i = lane % v.inner;
        const T* src = x + o * v.n * v.inner + i;
        for (int64_t j = 0; j < v.n; ++j) buf[j] = {src[j * v.inner], j};
        auto before = [largest](const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) {
          const bool ab = largest ? greater(a.first, b.first) : greater(b.first, a.first);
          if (ab) return true;
          const bool ba = largest ? greater(b.first, a.first) : greater(a.first, b.first);
          return !ba && a.second < b.second;
        };
        std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), before);
        T* vo = vals + o * k * v.inner + i;
        int64_t* io = idx + o * k * v.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          vo[j * v.inner] = buf[j].first;
          io[j * v.inner] = buf[j].second;
        }
      }
    }
  }

 private:
  AxisView v_;
  int64_t k_;
  bool largest_;
};

std::unique_ptr<Kernel> make_topk(const KernelSpec& spec) {
  if (spec.inputs.empty() || spec.outputs.size() != 2)
    spec_error(spec, "takes X -> Values, Indices");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& vals = spec.outputs[0];
  if (!x.is_contiguous() || !vals.is_contiguous() || !spec.outputs[1].is_contiguous())
    spec_error(spec, "plain data only");
  if (vals.dtype != x.dtype || spec.outputs[1].dtype != DType::i64)
    spec_error(spec, "bad output dtypes");
  AxisView v = axis_view(spec, x);
  const int64_t k = vals.dims[spec.attrs.get_int("axis")];
  if (k > v.n || vals.dims != spec.outputs[1].dims) spec_error(spec, "k out of range");
  const bool largest = spec.attrs.get_int("largest", 1) != 0;
  switch (x.dtype) {
    case DType::f32: return std::make_unique<TopKKernel<float>>(v, k, largest);
    case DType::f64: return std::make_unique<TopKKernel<double>>(v, k, largest);
    case DType::i8: return std::make_unique<TopKKernel<int8_t>>(v, k, largest);
    case DType::i16: return std::make_unique<TopKKernel<int16_t>>(v, k, largest);
    case DType::i32: return std::make_unique<TopKKernel<int32_t>>(v, k, largest);
    case DType::i64: return std::make_unique<TopKKernel<int64_t>>(v, k, largest);
    case DType::u8: return std::make_unique<TopKKernel<uint8_t>>(v, k, largest);
    case DType::u16: return std::make_unique<TopKKernel<uint16_t>>(v, k, largest);
    case DType::u32: return std::make_unique<TopKKernel<uint32_t>>(v, k, largest);
    case DType::u64: return std::make_unique<TopKKernel<uint64_t>>(v, k, largest);
    default: spec_error(spec, "unsupported dtype");
  }
}

template <typename T>
class HardmaxKernel : public Kernel {
 public:
  explicit HardmaxKernel(AxisView v) : v_(v) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    T* y = static_cast<T*>(outputs[0]);
    const AxisView v = v_;
    const int64_t lanes = v.outer * v.inner;
    if (v.n == 0) return;
#pragma omp parallel for schedule(static) if (lanes * v.n > kParallelWork)
    for (int64_t lane = 0; lane < lanes; ++lane) {
      const int64_t o = lane / v.inner, i = lane % v.inner;
      const T* src = x + o * v.n * v.inner + i;
      T* dst = y + o * v.n * v.inner + i;
      int64_t best = 0;
      for (int64_t j = 1; j < v.n && !is_nan(src[best * v.inner]); ++j)
        if (greater(src[j * v.inner], src[best * v.inner])) best = j;
      for (int64_t j = 0; j < v.n; ++j) dst[j * v.inner] = j == best ? T(1) : T(0);
    }
  }

 private:
  AxisView v_;
};

template <typename T>
class LpNormKernel : public Kernel {
 public:
  LpNormKernel(AxisView v, int p) : v_(v), p_(p) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    T* y = static_cast<T*>(outputs[0]);
    const AxisView v = v_;
    const int64_t lanes = v.outer * v.inner;
    const bool l1 = p_ == 1;
#pragma omp parallel for schedule(static) if (lanes * v.n > kParallelWork)
    for (int64_t lane = 0; lane < lanes; ++lane) {
      const int64_t o = lane / v.inner, i = lane % v.inner;
      const T* src = x + o * v.n * v.inner + i;
      T* dst = y + o * v.n * v.inner + i;
      double acc = 0.0;
      for (int64_t j = 0; j < v.n; ++j) {
        const double e = static_cast<double>(src[j * v.inner]);
        acc += l1 ? std::fabs(e) : e * e;
      }
      const T norm = l1 ? static_cast<T>(acc) : static_cast<T>(std::sqrt(static_cast<T>(acc)));
      for (int64_t j = 0; j < v.n; ++j)
        dst[j * v.inner] = norm != T(0) ? src[j * v.inner] / norm : T(0);
    }
  }

 private:
  AxisView v_;
  int p_;
};

void check_unary_float(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1)
    spec_error(spec, "takes one input and one output");
  const TensorInfo& x = spec.inputs[0];
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  if (x.dtype != spec.outputs[0].dtype || x.dims != spec.outputs[0].dims)
    spec_error(spec, "x and y differ");
  if (x.dtype != DType::f32 && x.dtype != DType::f64) spec_error(spec, "float32 / float64 only");
}

std::unique_ptr<Kernel> make_hardmax(const KernelSpec& spec) {
  check_unary_float(spec);
  AxisView v = axis_view(spec, spec.inputs[0]);
  if (spec.inputs[0].dtype == DType::f64) return std::make_unique<HardmaxKernel<double>>(v);
  return std::make_unique<HardmaxKernel<float>>(v);
}

std::unique_ptr<Kernel> make_lp_norm(const KernelSpec& spec) {
  check_unary_float(spec);
  AxisView v = axis_view(spec, spec.inputs[0]);
  const int p = static_cast<int>(spec.attrs.get_int("p"));
  if (p != 1 && p != 2) spec_error(spec, "p must be 1 or 2");
  if (spec.inputs[0].dtype == DType::f64) return std::make_unique<LpNormKernel<double>>(v, p);
  return std::make_unique<LpNormKernel<float>>(v, p);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("TopK", make_topk);
GRAPHKILN_REGISTER_KERNEL("Hardmax", make_hardmax);
GRAPHKILN_REGISTER_KERNEL("LpNormalization", make_lp_norm);

}  // namespace graphkiln
