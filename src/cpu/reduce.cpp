// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Reduce" (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare) and "ArgReduce"
// (ArgMax/ArgMin) over any set of axes of an input of any strides (plain or channels-last);
// the output is plain. Fast paths: reduced elements contiguous (rows), or the innermost kept
// dim contiguous (columns, e.g. a global average pool over channels-last data).
//
// Reduce attrs: op (sum mean max min prod l1 l2 log_sum log_sum_exp sum_square, as
// src/gpu/reduce.hip), axes (sorted, non-negative; empty = identity copy). ArgReduce
// attrs: axis, select_last_index, max (1/0).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

// FP exceptions are never inspected: let the vectorizer if-convert float selects.
#pragma GCC optimize("no-trapping-math")
#include "core/kernel.hpp"
#include "cpu/fast_math.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 32768;

enum class ROp { sum, mean, max, min, prod, l1, l2, logsum, logsumexp, sumsquare };

ROp parse_op(const KernelSpec& spec, const std::string& s) {
  if (s == "sum") return ROp::sum;
  if (s == "mean") return ROp::mean;
  if (s == "max") return ROp::max;
  if (s == "min") return ROp::min;
  if (s == "prod") return ROp::prod;
  if (s == "l1") return ROp::l1;
  if (s == "l2") return ROp::l2;
  if (s == "log_sum") return ROp::logsum;
  if (s == "log_sum_exp") return ROp::logsumexp;
  if (s == "sum_square") return ROp::sumsquare;
  spec_error(spec, "unknown reduction '" + s + "'");
}

// Offsets (elements) of every point of an index space given by dims/strides, row-major.
std::vector<int64_t> offsets(const std::vector<int64_t>& dims,
                             const std::vector<int64_t>& strides) {
  std::vector<int64_t> out{0};
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(out.size() * dims[d]);
    for (int64_t base : out)
      for (int64_t i = 0; i < dims[d]; ++i) next.push_back(base + i * strides[d]);
    out.swap(next);
  }
  return out;
}

// Merge adjacent dims (in the given order) that are contiguous in `strides`.
void coalesce(std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  std::vector<int64_t> d2, s2;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d2.empty() && s2.back() == strides[i] * dims[i]) {
      d2.back() *= dims[i];
      s2.back() = strides[i];
    } else {
      d2.push_back(dims[i]);
      s2.push_back(strides[i]);
    }
  }
  dims.swap(d2);
  strides.swap(s2);
}

// The geometry both kernels share: kept dims (output order) and reduced dims of the input.
struct Geometry {
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  int64_t M = 1, K = 1;
  Geometry(const TensorInfo& in, const std::vector<int64_t>& axes) {
    std::vector<bool> reduced(in.rank(), false);
    for (int64_t a : axes) reduced[a] = true;
    std::vector<int> red_order;
    for (int d = 0; d < in.rank(); ++d) {
      if (reduced[d]) {
        red_order.push_back(d);
      } else {
        kept_dims.push_back(in.dims[d]);
        kept_strides.push_back(in.strides[d]);
      }
    }
    // reduced dims: any order works; take the input's physical order to merge most
    std::stable_sort(red_order.begin(), red_order.end(),
                     [&](int a, int b) { return in.strides[a] > in.strides[b]; });
    for (int d : red_order) {
      red_dims.push_back(in.dims[d]);
      red_strides.push_back(in.strides[d]);
    }
    coalesce(kept_dims, kept_strides);
    coalesce(red_dims, red_strides);
    for (int64_t d : kept_dims) M *= d;
    for (int64_t d : red_dims) K *= d;
  }
};

template <typename A>
A neg_inf() {
  if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
  return std::numeric_limits<A>::lowest();
}

template <typename T>
struct Acc {
  using type = double;
};
template <>
struct Acc<int64_t> {
  using type = int64_t;
};
template <>
struct Acc<int32_t> {
  using type = int64_t;
};

// One reduction: identity, how an element joins an accumulator, how two accumulators
// combine and the final value (count K, logsumexp's shift `peak`).
template <ROp OP, typename A>
struct Rule {
  static A identity() {
    if constexpr (OP == ROp::prod) return A(1);
    if constexpr (OP == ROp::max) return neg_inf<A>();
    if constexpr (OP == ROp::min) {
      if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
      return std::numeric_limits<A>::max();
    }
    return A(0);
  }
  static A step(A acc, A x, A peak) {
    if constexpr (OP == ROp::l1) return acc + (x < 0 ? -x : x);
    if constexpr (OP == ROp::l2 || OP == ROp::sumsquare) return acc + x * x;
    if constexpr (OP == ROp::prod) return acc * x;
    if constexpr (OP == ROp::max) return (x > acc || x != x) ? x : acc;
    if constexpr (OP == ROp::min) return (x < acc || x != x) ? x : acc;
    if constexpr (OP == ROp::logsumexp) return acc + A(std::exp(double(x - peak)));
    return acc + x;
  }
  static A combine(A a, A b) {
    if constexpr (OP == ROp::prod) return a * b;
    if constexpr (OP == ROp::max) return (b > a || b != b) ? b : a;
    if constexpr (OP == ROp::min) return (b < a || b != b) ? b : a;
    return a + b;
  }
  template <typename T>
  static T finish(A v, int64_t K, double peak) {
    if constexpr (OP == ROp::mean) return static_cast<T>(double(v) / double(K));
    if constexpr (OP == ROp::l2) return static_cast<T>(std::sqrt(double(v)));
    if constexpr (OP == ROp::logsum) return static_cast<T>(std::log(double(v)));
    if constexpr (OP == ROp::logsumexp) return static_cast<T>(std::log(double(v)) + peak);
    return static_cast<T>(v);
  }
};

// Accumulators: float data sums in float lanes per block of kBlock elements, the blocks in
// double; everything else in the wider type.
template <typename T>
struct Lane {
  using type = typename Acc<T>::type;
};
template <>
struct Lane<float> {
  using type = float;
};

template <typename T>
class ReduceKernel : public Kernel {
  using A = typename Acc<T>::type;   // block / total accumulator
  using L = typename Lane<T>::type;  // lane accumulator inside a block
  static constexpr int kLanes = 16;
  static constexpr int64_t kBlock = 1024;

 public:
  ReduceKernel(const KernelSpec& spec, ROp op, const std::vector<int64_t>& axes)
      : op_(op), geo_(spec.inputs[0], axes) {
    kept_off_ = offsets(geo_.kept_dims, geo_.kept_strides);
    rows_ = geo_.red_dims.size() == 1 && geo_.red_strides[0] == 1;
    if (!rows_) red_off_ = offsets(geo_.red_dims, geo_.red_strides);
    // columns: innermost kept dim contiguous and at least a vector wide
    if (!rows_ && !geo_.kept_dims.empty() && geo_.kept_strides.back() == 1 &&
        geo_.kept_dims.back() >= 8) {
      cols_ = true;
      inner_ = geo_.kept_dims.back();
      std::vector<int64_t> od(geo_.kept_dims.begin(), geo_.kept_dims.end() - 1);
      std::vector<int64_t> os(geo_.kept_strides.begin(), geo_.kept_strides.end() - 1);
      outer_off_ = offsets(od, os);
    }
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    T* y = static_cast<T*>(outputs[0]);
    switch (op_) {
      case ROp::sum: return run_op<ROp::sum>(x, y);
      case ROp::mean: return run_op<ROp::mean>(x, y);
      case ROp::max: return run_op<ROp::max>(x, y);
      case ROp::min: return run_op<ROp::min>(x, y);
      case ROp::prod: return run_op<ROp::prod>(x, y);
      case ROp::l1: return run_op<ROp::l1>(x, y);
      case ROp::l2: return run_op<ROp::l2>(x, y);
      case ROp::logsum: return run_op<ROp::logsum>(x, y);
      case ROp::logsumexp: return run_op<ROp::logsumexp>(x, y);
      case ROp::sumsquare: return run_op<ROp::sumsquare>(x, y);
    }
  }

 private:
  template <ROp OP>
  void run_op(const T* x, T* y) const {
    using RA = Rule<OP, A>;
    const int64_t M = geo_.M, K = geo_.K;
    if (cols_) {
      const int64_t outer = static_cast<int64_t>(outer_off_.size());
      constexpr int64_t kChunk = 256;
      const int64_t chunks = (inner_ + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (M * K > kParallelWork)
      for (int64_t task = 0; task < outer * chunks; ++task) {
        const int64_t o = task / chunks, c0 = (task % chunks) * kChunk;
        const int64_t n = std::min(kChunk, inner_ - c0);
        A acc[kChunk], peak[kChunk];
        const T* base = x + outer_off_[o] + c0;
        for (int64_t i = 0; i < n; ++i) peak[i] = 0;
        if constexpr (OP == ROp::logsumexp) {
          for (int64_t i = 0; i < n; ++i) peak[i] = neg_inf<A>();
          for (int64_t k = 0; k < K; ++k) {
            const T* p = base + red_off_[k];
            for (int64_t i = 0; i < n; ++i) peak[i] = Rule<ROp::max, A>::step(peak[i], A(p[i]), 0);
          }
          for (int64_t i = 0; i < n; ++i)
            if (!std::isfinite(double(peak[i]))) peak[i] = 0;
        }
        for (int64_t i = 0; i < n; ++i) acc[i] = RA::identity();
        for (int64_t k = 0; k < K; ++k) {
          const T* __restrict p = base + red_off_[k];
          for (int64_t i = 0; i < n; ++i) acc[i] = RA::step(acc[i], A(p[i]), peak[i]);
        }
        T* out = y + o * inner_ + c0;
        for (int64_t i = 0; i < n; ++i) out[i] = RA::template finish<T>(acc[i], K, double(peak[i]));
      }
      return;
    }
#pragma omp parallel for schedule(static) if (M * K > kParallelWork)
    for (int64_t m = 0; m < M; ++m) {
      const T* base = x + kept_off_[m];
      if (rows_) {
        y[m] = reduce_row<OP>(base, K);
        continue;
      }
      A peak = 0;
      if constexpr (OP == ROp::logsumexp) {
        A p = neg_inf<A>();
        for (int64_t k = 0; k < K; ++k) p = Rule<ROp::max, A>::step(p, A(base[red_off_[k]]), 0);
        peak = std::isfinite(double(p)) ? p : 0;
      }
      A acc = RA::identity();
      for (int64_t k = 0; k < K; ++k) acc = RA::step(acc, A(base[red_off_[k]]), peak);
      y[m] = RA::template finish<T>(acc, K, double(peak));
    }
  }

  // a contiguous row: lanes of independent accumulators (vectorized), blocks combined in A
  template <ROp OP>
  T reduce_row(const T* __restrict p, int64_t K) const {
    using RL = Rule<OP, L>;
    using RA = Rule<OP, A>;
    A peak = 0;
    if constexpr (OP == ROp::logsumexp) {
      A m = neg_inf<A>();
      for (int64_t k = 0; k < K; ++k) m = Rule<ROp::max, A>::step(m, A(p[k]), 0);
      peak = std::isfinite(double(m)) ? m : 0;
      A total = 0;
      for (int64_t k = 0; k < K; ++k) total += std::exp(double(p[k]) - double(peak));
      return RA::template finish<T>(total, K, double(peak));
    }
    A total = RA::identity();
    for (int64_t b0 = 0; b0 < K; b0 += kBlock) {
      const int64_t b1 = std::min(K, b0 + kBlock);
      L lanes[kLanes];
      for (int i = 0; i < kLanes; ++i) lanes[i] = RL::identity();
      int64_t k = b0;
      for (; k + kLanes <= b1; k += kLanes)
        for (int i = 0; i < kLanes; ++i) lanes[i] = RL::step(lanes[i], L(p[k + i]), 0);
      L block = RL::identity();
      for (; k < b1; ++k) block = RL::step(block, L(p[k]), 0);
      for (int i = 0; i < kLanes; ++i) block = RL::combine(block, lanes[i]);
      total = RA::combine(total, A(block));
    }
    return RA::template finish<T>(total, K, double(peak));
  }

  ROp op_;
  Geometry geo_;
  std::vector<int64_t> kept_off_, red_off_, outer_off_;
  bool rows_ = false, cols_ = false;
  int64_t inner_ = 0;
};

std::unique_ptr<Kernel> make_reduce(const KernelSpec& spec) {
  if (spec.inputs.empty() || spec.outputs.size() != 1) spec_error(spec, "takes 1 input, 1 output");
  const TensorInfo& in = spec.inputs[0];
  if (spec.outputs[0].dtype != in.dtype) spec_error(spec, "output dtype differs from the input's");
  if (!spec.outputs[0].is_contiguous()) spec_error(spec, "output must be plain");
  ROp op = parse_op(spec, spec.attrs.get_str("op"));
  std::vector<int64_t> axes = spec.attrs.get_ints("axes");
  for (int64_t a : axes)
    if (a < 0 || a >= in.rank()) spec_error(spec, "axis out of range");
  switch (in.dtype) {
    case DType::f32: return std::make_unique<ReduceKernel<float>>(spec, op, axes);
    case DType::f64: return std::make_unique<ReduceKernel<double>>(spec, op, axes);
    case DType::i64:
    case DType::i32:
      if (op == ROp::mean || op == ROp::l2 || op == ROp::logsum || op == ROp::logsumexp)
        spec_error(spec, "this reduction needs float data");
      if (in.dtype == DType::i64) return std::make_unique<ReduceKernel<int64_t>>(spec, op, axes);
      return std::make_unique<ReduceKernel<int32_t>>(spec, op, axes);
    default: spec_error(spec, "unsupported dtype");
  }
}

template <typename T>
class ArgReduceKernel : public Kernel {
 public:
  ArgReduceKernel(const KernelSpec& spec, int64_t axis, bool last, bool is_max)
      : geo_(spec.inputs[0], {axis}), last_(last), max_(is_max) {
    kept_off_ = offsets(geo_.kept_dims, geo_.kept_strides);
    stride_ = geo_.red_strides.empty() ? 0 : geo_.red_strides[0];
  }
  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    int64_t* y = static_cast<int64_t*>(outputs[0]);
    const int64_t M = geo_.M, K = geo_.K, s = stride_;
#pragma omp parallel for schedule(static) if (M * K > kParallelWork)
    for (int64_t m = 0; m < M; ++m) {
      const T* p = x + kept_off_[m];
      T best = p[0];
      int64_t idx = 0;
      for (int64_t k = 1; k < K; ++k) {
        T v = p[k * s];
        bool better = max_ ? (last_ ? v >= best : v > best) : (last_ ? v <= best : v < best);
        if (better) {
          best = v;
          idx = k;
        }
      }
      y[m] = idx;
    }
  }

 private:
  Geometry geo_;
  std::vector<int64_t> kept_off_;
  int64_t stride_;
  bool last_, max_;
};

std::unique_ptr<Kernel> make_arg_reduce(const KernelSpec& spec) {
  const TensorInfo& in = spec.inputs[0];
  int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0 || axis >= in.rank()) spec_error(spec, "axis out of range");
  if (in.dims[axis] == 0) spec_error(spec, "cannot reduce an empty axis");
  bool last = spec.attrs.get_int("select_last_index", 0) != 0;
  bool is_max = spec.attrs.get_int("max") != 0;
  switch (in.dtype) {
    case DType::f32: return std::make_unique<ArgReduceKernel<float>>(spec, axis, last, is_max);
    case DType::f64: return std::make_unique<ArgReduceKernel<double>>(spec, axis, last, is_max);
    case DType::i64: return std::make_unique<ArgReduceKernel<int64_t>>(spec, axis, last, is_max);
    case DType::i32: return std::make_unique<ArgReduceKernel<int32_t>>(spec, axis, last, is_max);
    default: spec_error(spec, "unsupported dtype");
  }
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Reduce", make_reduce);
GRAPHKILN_REGISTER_KERNEL("ArgReduce", make_arg_reduce);

}  // namespace graphkiln
