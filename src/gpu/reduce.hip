// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Reduce: float32 / float16 / bfloat16 data (the output of the input's type; float32
// arithmetic, one rounding) seen as [outer, len, inner] -> [outer, inner] (the lowering turns
// the reduced axes, which must be adjacent, into the three sizes). attrs "op": sum, mean,
// max, min, prod, l1, l2, sum_square, log_sum, log_sum_exp. One block a row when inner is 1.
#include "gpu/common.hpp"

#include <cstdint>
#include <map>

#include "gpu/block_reduce.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

enum ReduceOp : int { SUM, MEAN, MAX, MIN, PROD, L1, L2, SUM_SQUARE, LOG_SUM, LOG_SUM_EXP };

struct ProdOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct MinOp {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
};

__device__ inline float pre(int op, float v, float shift) {
  switch (op) {
    case L1: return fabsf(v);
    case L2:
    case SUM_SQUARE: return v * v;
    case LOG_SUM_EXP: return expf(v - shift);
    default: return v;
  }
}

__device__ inline float post(int op, float acc, int64_t len, float shift) {
  switch (op) {
    case MEAN: return acc / static_cast<float>(len);
    case L2: return sqrtf(acc);
    case LOG_SUM: return logf(acc);
    case LOG_SUM_EXP: return logf(acc) + shift;
    default: return acc;
  }
}

__device__ inline float identity(int op) {
  return op == MAX ? -INFINITY : (op == MIN ? INFINITY : (op == PROD ? 1.f : 0.f));
}

template <typename T>
__global__ void reduce_rows(const T* x, T* y, int64_t len, int op) {
  const T* row = x + blockIdx.x * len;
  float shift = 0.f;
  if (op == LOG_SUM_EXP) {
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) top = fmaxf(top, load_float(row[j]));
    shift = block_reduce(top, MaxOp());
    if (isinf(shift)) shift = 0.f;
  }
  float acc = identity(op);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float v = pre(op, load_float(row[j]), shift);
    acc = op == MAX ? fmaxf(acc, v) : op == MIN ? fminf(acc, v) : op == PROD ? acc * v : acc + v;
  }
  if (op == MAX) acc = block_reduce(acc, MaxOp());
  else if (op == MIN) acc = block_reduce(acc, MinOp());
  else if (op == PROD) acc = block_reduce(acc, ProdOp());
  else acc = block_reduce(acc, SumOp());
  if (threadIdx.x == 0) y[blockIdx.x] = store_float<T>(post(op, acc, len, shift));
}

template <typename T>
__global__ void reduce_columns(const T* x, T* y, int64_t outer, int64_t len, int64_t inner,
                               int op) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < outer * inner;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t base = (i / inner) * len * inner + i % inner;
    float shift = 0.f;
    if (op == LOG_SUM_EXP) {
      shift = -INFINITY;
      for (int64_t j = 0; j < len; ++j) shift = fmaxf(shift, load_float(x[base + j * inner]));
      if (isinf(shift)) shift = 0.f;
    }
    float acc = identity(op);
    for (int64_t j = 0; j < len; ++j) {
      const float v = pre(op, load_float(x[base + j * inner]), shift);
      acc = op == MAX ? fmaxf(acc, v) : op == MIN ? fminf(acc, v) : op == PROD ? acc * v : acc + v;
    }
    y[i] = store_float<T>(post(op, acc, len, shift));
  }
}

// ArgMax / ArgMin along the middle of [outer, len, inner] -> int64 [outer, inner]; the first
// index of the extreme value, or the last with select_last_index.
__global__ void arg_reduce(const float* x, int64_t* y, int64_t outer, int64_t len, int64_t inner,
                           int is_max, int last) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < outer * inner;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t base = (i / inner) * len * inner + i % inner;
    float best = x[base];
    int64_t at = 0;
    for (int64_t j = 1; j < len; ++j) {
      const float v = x[base + j * inner];
      const bool better = is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
      if (better) {
        best = v;
        at = j;
      }
    }
    y[i] = at;
  }
}

class ArgReduce : public Kernel {
 public:
  explicit ArgReduce(const KernelSpec& spec) {
    if (spec.inputs.at(0).dtype != DType::f32 || !spec.inputs[0].is_contiguous())
      spec_error(spec, "needs contiguous float32");
    outer_ = spec.attrs.get_int("outer");
    len_ = spec.attrs.get_int("len");
    inner_ = spec.attrs.get_int("inner");
    is_max_ = static_cast<int>(spec.attrs.get_int("is_max"));
    last_ = static_cast<int>(spec.attrs.get_int("select_last_index", 0));
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (outer_ * inner_ == 0 || len_ == 0) return;
    arg_reduce<<<blocks_for(outer_ * inner_, 256), 256, 0, ctx.stream>>>(
        static_cast<const float*>(inputs[0]), static_cast<int64_t*>(outputs[0]), outer_, len_,
        inner_, is_max_, last_);
    check_launch("arg_reduce");
  }

 private:
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
  int is_max_ = 1, last_ = 0;
};

class Reduce : public Kernel {
 public:
  explicit Reduce(const KernelSpec& spec) {
    static const std::map<std::string, int> ops = {
        {"sum", SUM},         {"mean", MEAN},
        {"max", MAX},         {"min", MIN},
        {"prod", PROD},       {"l1", L1},
        {"l2", L2},           {"sum_square", SUM_SQUARE},
        {"log_sum", LOG_SUM}, {"log_sum_exp", LOG_SUM_EXP}};
    const auto it = ops.find(spec.attrs.get_str("op"));
    if (it == ops.end()) spec_error(spec, "unknown reduction " + spec.attrs.get_str("op"));
    dtype_ = spec.inputs.at(0).dtype;
    if (!is_float_type(dtype_) || spec.outputs.at(0).dtype != dtype_ ||
        !spec.inputs[0].is_contiguous())
      spec_error(spec,
                 "needs contiguous float32, float16 or bfloat16 data and a result of its type");
    op_ = it->second;
    outer_ = spec.attrs.get_int("outer");
    len_ = spec.attrs.get_int("len");
    inner_ = spec.attrs.get_int("inner");
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (outer_ * inner_ == 0) return;
    dispatch_float(dtype_, [&](auto t) {
      using T = decltype(t);
      const T* x = static_cast<const T*>(inputs[0]);
      T* y = static_cast<T*>(outputs[0]);
      if (inner_ == 1 && len_ >= 64)
        reduce_rows<T>
            <<<static_cast<unsigned>(outer_), kRowThreads, 0, ctx.stream>>>(x, y, len_, op_);
      else
        reduce_columns<T><<<blocks_for(outer_ * inner_, 256), 256, 0, ctx.stream>>>(
            x, y, outer_, len_, inner_, op_);
    });
    check_launch("reduce");
  }

 private:
  int op_ = SUM;
  DType dtype_ = DType::f32;
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> make_reduce(const KernelSpec& spec) {
  return std::make_unique<Reduce>(spec);
}
std::unique_ptr<Kernel> make_arg_reduce(const KernelSpec& spec) {
  return std::make_unique<ArgReduce>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
