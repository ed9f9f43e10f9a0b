// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "cpu/swish_tail.hpp"

#include <immintrin.h>

#include <algorithm>
#include <numeric>

#include "cpu/cpu_features.hpp"
#include "cpu/fast_math.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelElems = 1 << 15;
constexpr int64_t kChunk = 1 << 12;  // elements of a contiguous run one task takes

__attribute__((target_clones("avx2", "default"))) void swish_run_portable(float* x, int64_t n,
                                                                          float alpha) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * fastmath::sigmoid(alpha * x[i]);
}

// AVX-512: exp(-alpha x) as 2^k * e^r (the same polynomial as fastmath::exp; the power of two
// by vscalefps: fastmath::exp_v's clamps, selects and shifts made this loop 1.4x slower), and
// 1 / (1 + e) by vrcp14ps and one Newton step (relative error ~2^-28) instead of a division,
// whose 16-lane throughput bounded the loop (~30 cycles a vector). -alpha x is clamped to 88
// so that 1 + e stays finite (the step needs it), and there the reciprocal is taken as 0: the
// exact x * sigmoid is below 1e-36 in magnitude, and x = -inf gives NaN, as x * sigmoid(x)
// does.
__attribute__((target("avx512f"))) inline __m512 swish16(__m512 x, __m512 alpha) {
  const __m512 v = _mm512_min_ps(_mm512_mul_ps(x, _mm512_sub_ps(_mm512_setzero_ps(), alpha)),
                                 _mm512_set1_ps(88.0f));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), v);
  r = _mm512_fmadd_ps(k, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 e =
      _mm512_scalef_ps(_mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), one), k);  // e^v
  const __m512 d = _mm512_add_ps(one, e);
  const __m512 r0 = _mm512_rcp14_ps(d);
  __m512 inv = _mm512_mul_ps(r0, _mm512_fnmadd_ps(d, r0, _mm512_set1_ps(2.0f)));
  inv = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_set1_ps(88.0f), _CMP_LT_OQ), inv);
  return _mm512_mul_ps(x, inv);
}

__attribute__((target("avx512f"))) void swish_run_avx512(float* x, int64_t n, float alpha) {
  const __m512 a = _mm512_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, swish16(_mm512_loadu_ps(x + i), a));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(x + i, m, swish16(_mm512_maskz_loadu_ps(m, x + i), a));
  }
}

void swish_run(float* x, int64_t n, float alpha) {
  if (cpu_features::avx512()) swish_run_avx512(x, n, alpha);
  else swish_run_portable(x, n, alpha);
}

// The tensor as `outer` runs of `inner` contiguous elements, run k at offset_of(k): dims
// sorted by stride, the innermost of stride 1, with every dim that continues the run merged.
struct Runs {
  int64_t inner = 1, outer = 1;
  std::vector<int64_t> dims, strides;  // the outer dims, innermost last

  int64_t offset_of(int64_t k) const {
    int64_t off = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      off += (k % dims[d]) * strides[d];
      k /= dims[d];
    }
    return off;
  }
};

Runs runs_of(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<size_t> order(dims.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  Runs r;
  std::vector<size_t> outer;
  for (size_t i = order.size(); i-- > 0;) {
    const size_t d = order[i];
    if (dims[d] == 1) continue;
    if (outer.empty() && strides[d] == r.inner) {
      r.inner *= dims[d];  // continues the contiguous run
    } else {
      outer.push_back(d);
    }
  }
  for (size_t i = outer.size(); i-- > 0;) {
    r.dims.push_back(dims[outer[i]]);
    r.strides.push_back(strides[outer[i]]);
    r.outer *= dims[outer[i]];
  }
  return r;
}

}  // namespace

void swish_in_place(float* data, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& strides, float alpha) {
  const Runs r = runs_of(dims, strides);
  if (r.inner == 0 || r.outer == 0) return;
  const int64_t chunks = (r.inner + kChunk - 1) / kChunk;
  const int64_t tasks = r.outer * chunks;
#pragma omp parallel for schedule(static) if (r.inner * r.outer > kParallelElems)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t run = t / chunks, begin = (t % chunks) * kChunk;
    swish_run(data + r.offset_of(run) + begin, std::min(kChunk, r.inner - begin), alpha);
  }
}

}  // namespace graphkiln
