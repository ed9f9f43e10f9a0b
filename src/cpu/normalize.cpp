// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Softmax" / "LogSoftmax" along one axis and "LayerNormalization" over the trailing dims,
// on plain data. Rows along a contiguous last axis run a vectorized row routine (AVX2 and
// AVX-512 builds of it are chosen at run time); softmax along an inner axis works on whole
// vectors of the dims after it.
//
// Softmax attrs: axis (non-negative), log (0/1). LayerNormalization attrs: axis
// (non-negative), epsilon; inputs X, Scale, B? (Scale and B hold the K = prod(dims[axis:])
// values); outputs Y, Mean?, InvStdDev? (float32, one per row).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

// FP exceptions are never inspected: let the vectorizer if-convert float selects.
#pragma GCC optimize("no-trapping-math")
#include "core/kernel.hpp"
#include "cpu/cpu_features.hpp"
#include "cpu/fast_math.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 16384;
constexpr int kLanes = 16;

#define GK_ALWAYS_INLINE __attribute__((always_inline)) inline

GK_ALWAYS_INLINE float row_max(const float* x, int64_t n) {
  float m[kLanes];
  for (int i = 0; i < kLanes; ++i) m[i] = -std::numeric_limits<float>::infinity();
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int i = 0; i < kLanes; ++i) m[i] = x[k + i] > m[i] ? x[k + i] : m[i];
  float r = -std::numeric_limits<float>::infinity();
  for (; k < n; ++k) r = x[k] > r ? x[k] : r;
  for (int i = 0; i < kLanes; ++i) r = m[i] > r ? m[i] : r;
  return r;
}

GK_ALWAYS_INLINE float row_sum(const float* x, int64_t n) {
  float s[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int i = 0; i < kLanes; ++i) s[i] += x[k + i];
  float r = 0;
  for (; k < n; ++k) r += x[k];
  for (int i = 0; i < kLanes; ++i) r += s[i];
  return r;
}

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

#define GK_LOAD16(v, p) std::memcpy(&(v), (p), sizeof(v16f))
#define GK_STORE16(p, v) std::memcpy((p), &(v), sizeof(v16f))

// One row: max, exp(x - max) summed in the same pass, then scale (or log form). Written
// with GCC vectors of 16 floats (one AVX-512 register, two AVX2 ones, four SSE ones).
GK_ALWAYS_INLINE void softmax_row_impl(const float* __restrict x, float* __restrict y, int64_t n,
                                       bool log) {
  float m = -std::numeric_limits<float>::infinity();
  {
    v16f mx = v16f{} + m;
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
      v16f v;
      GK_LOAD16(v, x + k);
      mx = v > mx ? v : mx;
    }
    for (; k < n; ++k) m = x[k] > m ? x[k] : m;
    for (int i = 0; i < 16; ++i) m = mx[i] > m ? mx[i] : m;
  }
  if (!(m - m == 0)) m = 0;  // not finite
  const v16f mv = v16f{} + m;
  v16f sv = v16f{};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    v16f v;
    GK_LOAD16(v, x + k);
    v16f e = v - mv;
    fastmath::exp_v<v16f, v16i>(e);
    GK_STORE16(y + k, e);
    sv += e;
  }
  float sum = 0;
  for (; k < n; ++k) {
    y[k] = fastmath::exp(x[k] - m);
    sum += y[k];
  }
  for (int i = 0; i < 16; ++i) sum += sv[i];
  if (log) {
    const float shift = std::log(sum);
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - m) - shift;
  } else {
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; ++j) y[j] *= inv;
  }
}

GK_ALWAYS_INLINE void layernorm_row_impl(const float* __restrict x, float* __restrict y,
                                         const float* __restrict scale,
                                         const float* __restrict bias, int64_t n, float eps,
                                         float* mean_out, float* inv_out) {
  float mean = row_sum(x, n) / static_cast<float>(n);
  float s[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int i = 0; i < kLanes; ++i) {
      float d = x[k + i] - mean;
      s[i] += d * d;
    }
  float var = 0;
  for (; k < n; ++k) var += (x[k] - mean) * (x[k] - mean);
  for (int i = 0; i < kLanes; ++i) var += s[i];
  var /= static_cast<float>(n);
  float inv = 1.0f / std::sqrt(var + eps);
  if (bias) {
    for (int64_t j = 0; j < n; ++j) y[j] = ((x[j] - mean) * inv) * scale[j] + bias[j];
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] = ((x[j] - mean) * inv) * scale[j];
  }
  if (mean_out) *mean_out = mean;
  if (inv_out) *inv_out = inv;
}

void softmax_row_generic(const float* x, float* y, int64_t n, bool log) {
  softmax_row_impl(x, y, n, log);
}
__attribute__((target("avx2,fma"))) void softmax_row_avx2(const float* x, float* y, int64_t n,
                                                          bool log) {
  softmax_row_impl(x, y, n, log);
}
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,prefer-vector-width=512"))) void
softmax_row_avx512(const float* x, float* y, int64_t n, bool log) {
  softmax_row_impl(x, y, n, log);
}
void layernorm_row_generic(const float* x, float* y, const float* s, const float* b, int64_t n,
                           float eps, float* mo, float* io) {
  layernorm_row_impl(x, y, s, b, n, eps, mo, io);
}
__attribute__((target("avx2,fma"))) void layernorm_row_avx2(const float* x, float* y,
                                                            const float* s, const float* b,
                                                            int64_t n, float eps, float* mo,
                                                            float* io) {
  layernorm_row_impl(x, y, s, b, n, eps, mo, io);
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,prefer-vector-width=512"))) void
layernorm_row_avx512(const float* x, float* y, const float* s, const float* b, int64_t n, float eps,
                     float* mo, float* io) {
  layernorm_row_impl(x, y, s, b, n, eps, mo, io);
}

// The row kernels' build this CPU runs: 2 AVX-512, 1 AVX2 + FMA, 0 baseline
int row_isa() { return cpu_features::avx512() ? 2 : cpu_features::avx2_fma() ? 1 : 0; }

void outer_inner(const TensorInfo& t, int64_t axis, int64_t& outer, int64_t& K, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dims[d];
  K = t.dims[axis];
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dims[d];
}

class SoftmaxKernel : public Kernel {
 public:
  SoftmaxKernel(const KernelSpec& spec, int64_t axis, bool log) : log_(log) {
    outer_inner(spec.inputs[0], axis, outer_, K_, inner_);
  }
  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t outer = outer_, K = K_, inner = inner_;
    if (K == 0 || outer * inner == 0) return;
    const int isa = row_isa();
    const bool log = log_;
    if (inner == 1) {
#pragma omp parallel for schedule(static) if (outer * K > kParallelWork)
      for (int64_t r = 0; r < outer; ++r) {
        if (isa == 2) softmax_row_avx512(x + r * K, y + r * K, K, log);
        else if (isa == 1) softmax_row_avx2(x + r * K, y + r * K, K, log);
        else softmax_row_generic(x + r * K, y + r * K, K, log);
      }
      return;
    }
    // along an inner axis: for a chunk of up to kChunk positions of the dims after the
    // axis, K vectors (one per index along the axis)
    constexpr int64_t kChunk = 256;
    const int64_t chunks = (inner + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (outer * K * inner > kParallelWork)
    for (int64_t task = 0; task < outer * chunks; ++task) {
      const int64_t o = task / chunks, c0 = (task % chunks) * kChunk;
      const int64_t n = std::min(kChunk, inner - c0);
      const float* xo = x + o * K * inner + c0;
      float* yo = y + o * K * inner + c0;
      float m[kChunk], s[kChunk];
      for (int64_t i = 0; i < n; ++i) {
        m[i] = -std::numeric_limits<float>::infinity();
        s[i] = 0.0f;
      }
      for (int64_t k = 0; k < K; ++k)
        for (int64_t i = 0; i < n; ++i) m[i] = xo[k * inner + i] > m[i] ? xo[k * inner + i] : m[i];
      for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(m[i])) m[i] = 0;
      for (int64_t k = 0; k < K; ++k)
        for (int64_t i = 0; i < n; ++i) {
          float e = fastmath::exp(xo[k * inner + i] - m[i]);
          yo[k * inner + i] = e;
          s[i] += e;
        }
      if (log) {
        for (int64_t i = 0; i < n; ++i) s[i] = std::log(s[i]);
        for (int64_t k = 0; k < K; ++k)
          for (int64_t i = 0; i < n; ++i) yo[k * inner + i] = (xo[k * inner + i] - m[i]) - s[i];
      } else {
        for (int64_t i = 0; i < n; ++i) s[i] = 1.0f / s[i];
        for (int64_t k = 0; k < K; ++k)
          for (int64_t i = 0; i < n; ++i) yo[k * inner + i] *= s[i];
      }
    }
  }

 private:
  bool log_;
  int64_t outer_ = 1, K_ = 1, inner_ = 1;
};

std::unique_ptr<Kernel> make_softmax(const KernelSpec& spec) {
  const TensorInfo& in = spec.inputs[0];
  if (in.dtype != DType::f32 || spec.outputs[0].dtype != DType::f32)
    spec_error(spec, "only float32 is supported");
  if (!in.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0 || axis >= in.rank()) spec_error(spec, "axis out of range");
  return std::make_unique<SoftmaxKernel>(spec, axis, spec.attrs.get_int("log", 0) != 0);
}

class LayerNormKernel : public Kernel {
 public:
  LayerNormKernel(const KernelSpec& spec, int64_t axis, float eps, bool bias, int nout)
      : eps_(eps), bias_(bias), nout_(nout) {
    const TensorInfo& x = spec.inputs[0];
    rows_ = 1;
    K_ = 1;
    for (int64_t d = 0; d < axis; ++d) rows_ *= x.dims[d];
    for (int64_t d = axis; d < x.rank(); ++d) K_ *= x.dims[d];
  }
  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const float* b = bias_ ? static_cast<const float*>(inputs[2]) : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    float* mo = nout_ > 1 ? static_cast<float*>(outputs[1]) : nullptr;
    float* io = nout_ > 2 ? static_cast<float*>(outputs[2]) : nullptr;
    const int64_t K = K_, rows = rows_;
    const float eps = eps_;
    if (K == 0) return;
    const int isa = row_isa();
#pragma omp parallel for schedule(static) if (rows * K > kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
      float* m = mo ? mo + r : nullptr;
      float* i = io ? io + r : nullptr;
      if (isa == 2) layernorm_row_avx512(x + r * K, y + r * K, scale, b, K, eps, m, i);
      else if (isa == 1) layernorm_row_avx2(x + r * K, y + r * K, scale, b, K, eps, m, i);
      else layernorm_row_generic(x + r * K, y + r * K, scale, b, K, eps, m, i);
    }
  }

 private:
  float eps_;
  bool bias_;
  int nout_;
  int64_t rows_ = 1, K_ = 1;
};

std::unique_ptr<Kernel> make_layernorm(const KernelSpec& spec) {
  const TensorInfo& x = spec.inputs[0];
  if (x.dtype != DType::f32) spec_error(spec, "only float32 is supported");
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0 || axis > x.rank()) spec_error(spec, "axis out of range");
  int64_t K = 1;
  for (int64_t d = axis; d < x.rank(); ++d) K *= x.dims[d];
  bool bias = spec.has_input(2);
  if (spec.inputs[1].numel() != K || spec.inputs[1].dtype != DType::f32)
    spec_error(spec, "Scale must hold prod(dims[axis:]) float32 values");
  if (bias && (spec.inputs[2].numel() != K || spec.inputs[2].dtype != DType::f32))
    spec_error(spec, "B must hold prod(dims[axis:]) float32 values");
  for (size_t o = 1; o < spec.outputs.size(); ++o)
    if (spec.outputs[o].dtype != DType::f32) spec_error(spec, "Mean / InvStdDev must be float32");
  return std::make_unique<LayerNormKernel>(spec, axis,
                                           static_cast<float>(spec.attrs.get_float("epsilon")),
                                           bias, static_cast<int>(spec.outputs.size()));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Softmax", make_softmax);
GRAPHKILN_REGISTER_KERNEL("LayerNormalization", make_layernorm);

}  // namespace graphkiln
