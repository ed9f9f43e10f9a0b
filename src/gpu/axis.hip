// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Ops along one axis of plain data viewed as [outer, n, inner], one thread per (outer,
// inner) lane, with the contracts of src/cpu/axis_ops.cpp (the cpu lowering feeds both):
//   "TopK" (attrs axis, largest; Values and int64 Indices, k = Values' dim on the axis;
//     sorted, ties in increasing index order, NaN the largest value): k selection passes,
//     each taking the first element after the previous one in that total order;
//   "Hardmax" (1 at the first maximum, a NaN wins; float32 / float64);
//   "LpNormalization" (p 1 or 2, summed in double; zeros where the norm is 0).
#include "gpu/common.hpp"

#include <cstdint>
#include <type_traits>

#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView axis_view(const KernelSpec& spec, const TensorInfo& x) {
  if (x.rank() == 0) spec_error(spec, "needs a ranked input");
  const int axis = static_cast<int>(spec.attrs.get_int("axis"));
  if (axis < 0 || axis >= x.rank()) spec_error(spec, "axis out of range");
  AxisView v;
  for (int d = 0; d < axis; ++d) v.outer *= x.dims[d];
  v.n = x.dims[axis];
  for (int d = axis + 1; d < x.rank(); ++d) v.inner *= x.dims[d];
  return v;
}

template <typename T>
__device__ inline bool is_nan(T v) {
  if constexpr (std::is_floating_point<T>::value) return v != v;
  return false;
}

// strict "a comes after b in ascending order", NaN the largest
template <typename T>
__device__ inline bool greater(T a, T b) {
  if (is_nan(b)) return false;
  if (is_nan(a)) return true;
  return a > b;
}

// (a, ia) is taken before (b, ib)
template <typename T>
__device__ inline bool before(T a, int64_t ia, T b, int64_t ib, bool largest) {
  const bool ab = largest ? greater(a, b) : greater(b, a);
  if (ab) return true;
  const bool ba = largest ? greater(b, a) : greater(a, b);
  return !ba && ia < ib;
}

template <typename T>
__global__ void topk_kernel(const T* x, T* vals, int64_t* idx, AxisView v, int64_t k,
                            bool largest) {
  const int64_t lanes = v.outer * v.inner;
  for (int64_t lane = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; lane < lanes;
       lane += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = lane / v.inner, i = lane % v.inner;
    const T* src = x + o * v.n * v.inner + i;
    T* vo = vals + o * k * v.inner + i;
    int64_t* io = idx + o * k * v.inner + i;
    T prev = T(0);
    int64_t prev_i = -1;
    for (int64_t r = 0; r < k; ++r) {
      int64_t best = -1;
      T best_v = T(0);
      for (int64_t j = 0; j < v.n; ++j) {
        const T e = src[j * v.inner];
        if (prev_i >= 0 && !before(prev, prev_i, e, j, largest)) continue;
        if (best < 0 || before(e, j, best_v, best, largest)) {
          best = j;
          best_v = e;
        }
      }
      vo[r * v.inner] = best_v;
      io[r * v.inner] = best;
      prev = best_v;
      prev_i = best;
    }
  }
}

template <typename T>
__global__ void hardmax_kernel(const T* x, T* y, AxisView v) {
  const int64_t lanes = v.outer * v.inner;
  for (int64_t lane = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; lane < lanes;
       lane += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = lane / v.inner, i = lane % v.inner;
    const T* src = x + o * v.n * v.inner + i;
    T* dst = y + o * v.n * v.inner + i;
    int64_t best = 0;
    for (int64_t j = 1; j < v.n && !is_nan(src[best * v.inner]); ++j)
      if (greater(src[j * v.inner], src[best * v.inner])) best = j;
    for (int64_t j = 0; j < v.n; ++j) dst[j * v.inner] = j == best ? T(1) : T(0);
  }
}

template <typename T>
__global__ void lp_norm_kernel(const T* x, T* y, AxisView v, bool l1) {
  const int64_t lanes = v.outer * v.inner;
  for (int64_t lane = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; lane < lanes;
       lane += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = lane / v.inner, i = lane % v.inner;
    const T* src = x + o * v.n * v.inner + i;
    T* dst = y + o * v.n * v.inner + i;
    double acc = 0.0;
    for (int64_t j = 0; j < v.n; ++j) {
      const double e = static_cast<double>(src[j * v.inner]);
      acc += l1 ? fabs(e) : e * e;
    }
    const T norm = l1 ? static_cast<T>(acc) : static_cast<T>(sqrt(static_cast<T>(acc)));
    for (int64_t j = 0; j < v.n; ++j)
      dst[j * v.inner] = norm != T(0) ? src[j * v.inner] / norm : T(0);
  }
}

enum AxisOp { kTopK, kHardmax, kLpNorm };

class AxisKernel : public Kernel {
 public:
  AxisKernel(const KernelSpec& spec, AxisOp op) : op_(op) {
    const TensorInfo& x = spec.inputs.at(0);
    const TensorInfo& y = spec.outputs.at(0);
    if (!x.is_contiguous() || !y.is_contiguous()) spec_error(spec, "plain data only");
    if (y.dtype != x.dtype) spec_error(spec, "bad output dtype");
    v_ = axis_view(spec, x);
    dtype_ = x.dtype;
    if (op == kTopK) {
      if (spec.outputs.size() != 2 || spec.outputs[1].dtype != DType::i64 ||
          !spec.outputs[1].is_contiguous() || spec.outputs[1].dims != y.dims)
        spec_error(spec, "takes X -> Values, Indices (int64)");
      k_ = y.dims[spec.attrs.get_int("axis")];
      if (k_ > v_.n) spec_error(spec, "k out of range");
      largest_ = spec.attrs.get_int("largest", 1) != 0;
      switch (dtype_) {
        case DType::f32:
        case DType::f64:
        case DType::i8:
        case DType::i16:
        case DType::i32:
        case DType::i64:
        case DType::u8:
        case DType::u16:
        case DType::u32:
        case DType::u64: break;
        default: spec_error(spec, "unsupported dtype");
      }
    } else {
      if (dtype_ != DType::f32 && dtype_ != DType::f64) spec_error(spec, "float32 / float64 only");
      if (op == kLpNorm) {
        const int64_t p = spec.attrs.get_int("p", 2);
        if (p != 1 && p != 2) spec_error(spec, "p must be 1 or 2");
        l1_ = p == 1;
      }
    }
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (v_.outer * v_.inner == 0 || v_.n == 0 || (op_ == kTopK && k_ == 0)) return;
    switch (dtype_) {
      case DType::f32: go<float>(inputs, outputs, ctx); break;
      case DType::f64: go<double>(inputs, outputs, ctx); break;
      case DType::i8: go<int8_t>(inputs, outputs, ctx); break;
      case DType::i16: go<int16_t>(inputs, outputs, ctx); break;
      case DType::i32: go<int32_t>(inputs, outputs, ctx); break;
      case DType::i64: go<int64_t>(inputs, outputs, ctx); break;
      case DType::u8: go<uint8_t>(inputs, outputs, ctx); break;
      case DType::u16: go<uint16_t>(inputs, outputs, ctx); break;
      case DType::u32: go<uint32_t>(inputs, outputs, ctx); break;
      default: go<uint64_t>(inputs, outputs, ctx); break;
    }
    check_launch("axis kernel");
  }

 private:
  template <typename T>
  void go(const void* const* inputs, void* const* outputs, Context& ctx) const {
    const unsigned blocks = blocks_for(v_.outer * v_.inner, 128);
    const T* x = static_cast<const T*>(inputs[0]);
    T* y = static_cast<T*>(outputs[0]);
    if (op_ == kTopK) {
      topk_kernel<T><<<blocks, 128, 0, ctx.stream>>>(x, y, static_cast<int64_t*>(outputs[1]), v_,
                                                     k_, largest_);
    } else if constexpr (std::is_floating_point<T>::value) {
      if (op_ == kHardmax) hardmax_kernel<T><<<blocks, 128, 0, ctx.stream>>>(x, y, v_);
      else lp_norm_kernel<T><<<blocks, 128, 0, ctx.stream>>>(x, y, v_, l1_);
    }
  }
  AxisOp op_;
  AxisView v_;
  DType dtype_ = DType::f32;
  int64_t k_ = 0;
  bool largest_ = true, l1_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_topk(const KernelSpec& spec) {
  return std::make_unique<AxisKernel>(spec, kTopK);
}
std::unique_ptr<Kernel> make_hardmax(const KernelSpec& spec) {
  return std::make_unique<AxisKernel>(spec, kHardmax);
}
std::unique_ptr<Kernel> make_lp_norm(const KernelSpec& spec) {
  return std::make_unique<AxisKernel>(spec, kLpNorm);
}

}  // namespace gpu
}  // namespace graphkiln
