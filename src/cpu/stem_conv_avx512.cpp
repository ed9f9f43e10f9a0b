// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The stem convolution's inner loop (stem_conv.hpp) for AVX-512. A row of output pixels is
// cut into blocks of P pixels; for each pass over up to 4 vectors of output channels, every
// tap (input channel, window row, window column) broadcasts the P pixels' input values and
// multiply-adds them with the tap's weight vectors into P x V accumulators. Pixels whose
// window lies inside the image take the unchecked block; the few at the borders go one at a
// time with the window clipped to the image (zero padding).
// The standard and project headers come first, outside the target pragma, so that no inline
// function they define is compiled for this ISA alone.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/stem_conv.hpp"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,prefer-vector-width=512")

namespace graphkiln {
namespace stem {
namespace {

inline __m512 clamp01(__m512 v) {
  return _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(1.0f));
}

inline __m512 apply_post(const Problem& p, __m512 v) {
  for (int i = 0; i < p.post_count; ++i) {
    const PostOp& op = p.post[i];
    const __m512 a = _mm512_set1_ps(op.alpha), b = _mm512_set1_ps(op.beta);
    switch (op.kind) {
      case PostKind::relu:
        v = _mm512_fmadd_ps(a, _mm512_min_ps(v, _mm512_setzero_ps()),
                            _mm512_max_ps(v, _mm512_setzero_ps()));
        break;
      case PostKind::clip: v = _mm512_min_ps(_mm512_max_ps(v, a), b); break;
      case PostKind::linear: v = _mm512_fmadd_ps(a, v, b); break;
      case PostKind::hardswish: v = _mm512_mul_ps(v, clamp01(_mm512_fmadd_ps(a, v, b))); break;
      case PostKind::hardsigmoid: v = clamp01(_mm512_fmadd_ps(a, v, b)); break;
    }
  }
  return v;
}

// bias, post-ops and the store of one pixel's V vectors (from vector kv0; `tail` masks the
// last vector of the row's channels)
template <int V>
inline void finish(const Problem& p, const __m512* acc, int64_t kv0, __mmask16 last_mask,
                   int64_t vectors, float* out) {
#pragma GCC unroll 16
  for (int v = 0; v < V; ++v) {
    const int64_t k = (kv0 + v) * kLanes;
    __m512 r = _mm512_add_ps(acc[v], _mm512_loadu_ps(p.bias + k));
    r = apply_post(p, r);
    if (kv0 + v == vectors - 1) _mm512_mask_storeu_ps(out + k, last_mask, r);
    else _mm512_storeu_ps(out + k, r);
  }
}

// P pixels from ow, all inside the image's columns; window rows [kh_lo, kh_hi); KWc the
// window's width where it is known when compiled (3: the common stems), else 0
template <int V, int P, int KWc>
inline void block(const Problem& p, const float* x, int64_t ih0, int64_t kh_lo, int64_t kh_hi,
                  int64_t ow, int64_t kv0, __mmask16 last_mask, int64_t vectors, float* y) {
  __m512 acc[P][V];
#pragma GCC unroll 16
  for (int q = 0; q < P; ++q)
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) acc[q][v] = _mm512_setzero_ps();
  const int64_t KW = KWc > 0 ? KWc : p.kernel_w, sw = p.stride_w, kp = p.k_pad;
  for (int64_t c = 0; c < p.channels; ++c) {
    for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
      const float* xr = x + (c * p.in_h + ih0 + kh) * p.in_w + ow * sw - p.pad_left;
      const float* wr = p.w + (c * p.kernel_h + kh) * KW * kp + kv0 * kLanes;
      for (int64_t kw = 0; kw < KW; ++kw) {
        __m512 wv[V];
#pragma GCC unroll 16
        for (int v = 0; v < V; ++v) wv[v] = _mm512_loadu_ps(wr + kw * kp + v * kLanes);
#pragma GCC unroll 16
        for (int q = 0; q < P; ++q) {
          const __m512 b = _mm512_set1_ps(xr[q * sw + kw]);
#pragma GCC unroll 16
          for (int v = 0; v < V; ++v) acc[q][v] = _mm512_fmadd_ps(b, wv[v], acc[q][v]);
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int q = 0; q < P; ++q) finish<V>(p, acc[q], kv0, last_mask, vectors, y + (ow + q) * p.maps);
}

// one pixel anywhere: the window clipped to the image
template <int V>
inline void single(const Problem& p, const float* x, int64_t ih0, int64_t kh_lo, int64_t kh_hi,
                   int64_t ow, int64_t kv0, __mmask16 last_mask, int64_t vectors, float* y) {
  __m512 acc[V];
#pragma GCC unroll 16
  for (int v = 0; v < V; ++v) acc[v] = _mm512_setzero_ps();
  const int64_t KW = p.kernel_w, kp = p.k_pad, iw0 = ow * p.stride_w - p.pad_left;
  const int64_t kw_lo = std::max<int64_t>(0, -iw0), kw_hi = std::min<int64_t>(KW, p.in_w - iw0);
  for (int64_t c = 0; c < p.channels; ++c) {
    for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
      const float* xr = x + (c * p.in_h + ih0 + kh) * p.in_w + iw0;
      const float* wr = p.w + (c * p.kernel_h + kh) * KW * kp + kv0 * kLanes;
      for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
        const __m512 b = _mm512_set1_ps(xr[kw]);
#pragma GCC unroll 16
        for (int v = 0; v < V; ++v)
          acc[v] = _mm512_fmadd_ps(b, _mm512_loadu_ps(wr + kw * kp + v * kLanes), acc[v]);
      }
    }
  }
  finish<V>(p, acc, kv0, last_mask, vectors, y + ow * p.maps);
}

template <int V>
void pass(const Problem& p, const float* x, int64_t oh, int64_t kv0, float* y) {
  constexpr int P = V == 1   ? 8
                    : V == 2 ? 12
                             : 6;  // P x V accumulators, with V weights and a broadcast
  const int64_t vectors = p.k_pad / kLanes;
  const int64_t rest = p.maps - (vectors - 1) * kLanes;
  const __mmask16 last_mask = static_cast<__mmask16>((1u << rest) - 1u);
  const int64_t ih0 = oh * p.stride_h - p.pad_top;
  const int64_t kh_lo = std::max<int64_t>(0, -ih0);
  const int64_t kh_hi = std::min<int64_t>(p.kernel_h, p.in_h - ih0);
  int64_t ow = 0;
  for (; ow < p.interior_lo; ++ow)
    single<V>(p, x, ih0, kh_lo, kh_hi, ow, kv0, last_mask, vectors, y);
  for (; ow + P <= p.interior_hi; ow += P) {
    switch (p.kernel_w) {
      case 3: block<V, P, 3>(p, x, ih0, kh_lo, kh_hi, ow, kv0, last_mask, vectors, y); break;
      default: block<V, P, 0>(p, x, ih0, kh_lo, kh_hi, ow, kv0, last_mask, vectors, y); break;
    }
  }
  for (; ow < p.out_w; ++ow) single<V>(p, x, ih0, kh_lo, kh_hi, ow, kv0, last_mask, vectors, y);
}

}  // namespace

void row_avx512(const Problem& p, const float* x, int64_t oh, float* y) {
  const int64_t vectors = p.k_pad / kLanes;
  for (int64_t kv0 = 0; kv0 < vectors; kv0 += kMaxVectors) {
    switch (std::min<int64_t>(kMaxVectors, vectors - kv0)) {
      case 1: pass<1>(p, x, oh, kv0, y); break;
      case 2: pass<2>(p, x, oh, kv0, y); break;
      case 3: pass<3>(p, x, oh, kv0, y); break;
      default: pass<4>(p, x, oh, kv0, y); break;
    }
  }
}

}  // namespace stem
}  // namespace graphkiln
#pragma GCC pop_options
