// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// attention_tiles.hpp on AVX-512. A tile of scores is R query rows by C vectors of 16 keys:
// K is first packed transposed (head size x keys, zero past the last key), so that each step
// over the head's features is one broadcast Q element times C key vectors per row. A tile of
// the context is R rows by C vectors of 16 output features: each step over the keys is one
// broadcast probability times C vectors of a V row. R <= 6 and C <= 4 keep the 24
// accumulators and the operand vectors in the 32 registers.
// The standard and project headers come first, outside the target pragma, so that no inline
// function they define is compiled for this ISA alone.
#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "cpu/attention_tiles.hpp"
#include "cpu/fast_math.hpp"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")

namespace graphkiln {
namespace attention_tiles {
namespace {

constexpr int kRows = 6;  // query rows of a register tile
constexpr int kVecs = 4;  // vectors of 16 floats in a tile's row

__mmask16 lanes(int64_t count) {
  return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
}

template <int R, int C>
inline void score_tile(const float* q, int64_t qs, const float* kt, int64_t ldk, int64_t d,
                       float scale, float* s, int64_t lds) {
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t e = 0; e < d; ++e) {
    __m512 key[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) key[c] = _mm512_loadu_ps(kt + e * ldk + 16 * c);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 qe = _mm512_set1_ps(q[r * qs + e]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(qe, key[c], acc[r][c]);
    }
  }
  const __m512 vscale = _mm512_set1_ps(scale);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      _mm512_storeu_ps(s + r * lds + 16 * c, _mm512_mul_ps(acc[r][c], vscale));
}

// All key vectors of R rows: whole tiles of kVecs, then the rest.
template <int R>
void score_rows(const float* q, int64_t qs, const float* kt, int64_t ldk, int64_t d, int64_t vecs,
                float scale, float* s, int64_t lds) {
  int64_t c = 0;
  for (; c + kVecs <= vecs; c += kVecs)
    score_tile<R, kVecs>(q, qs, kt + 16 * c, ldk, d, scale, s + 16 * c, lds);
  switch (vecs - c) {
    case 1: score_tile<R, 1>(q, qs, kt + 16 * c, ldk, d, scale, s + 16 * c, lds); break;
    case 2: score_tile<R, 2>(q, qs, kt + 16 * c, ldk, d, scale, s + 16 * c, lds); break;
    case 3: score_tile<R, 3>(q, qs, kt + 16 * c, ldk, d, scale, s + 16 * c, lds); break;
    default: break;
  }
}

using ScoreRows = void (*)(const float*, int64_t, const float*, int64_t, int64_t, int64_t, float,
                           float*, int64_t);
constexpr ScoreRows kScoreRows[kRows + 1] = {nullptr,       score_rows<1>, score_rows<2>,
                                             score_rows<3>, score_rows<4>, score_rows<5>,
                                             score_rows<6>};

// y rows [0, R), output vectors [0, C) from v's columns at v (the last vector: `last` lanes)
template <int R, int C>
inline void context_tile(const float* p, int64_t lds, int64_t n, const float* v, int64_t vs,
                         float* y, int64_t ys, __mmask16 last) {
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    const float* vj = v + j * vs;
    __m512 val[C];
#pragma GCC unroll 4
    for (int c = 0; c + 1 < C; ++c) val[c] = _mm512_loadu_ps(vj + 16 * c);
    val[C - 1] = _mm512_maskz_loadu_ps(last, vj + 16 * (C - 1));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 pj = _mm512_set1_ps(p[r * lds + j]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(pj, val[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c + 1 < C; ++c) _mm512_storeu_ps(y + r * ys + 16 * c, acc[r][c]);
    _mm512_mask_storeu_ps(y + r * ys + 16 * (C - 1), last, acc[r][C - 1]);
  }
}

template <int R>
void context_rows(const float* p, int64_t lds, int64_t n, const float* v, int64_t vs, int64_t dv,
                  float* y, int64_t ys) {
  const int64_t vecs = (dv + 15) / 16;
  const __mmask16 last = lanes(dv - 16 * (vecs - 1));
  int64_t c = 0;
  for (; c + kVecs < vecs; c += kVecs)  // whole tiles that are not the last
    context_tile<R, kVecs>(p, lds, n, v + 16 * c, vs, y + 16 * c, ys, lanes(16));
  switch (vecs - c) {
    case 1: context_tile<R, 1>(p, lds, n, v + 16 * c, vs, y + 16 * c, ys, last); break;
    case 2: context_tile<R, 2>(p, lds, n, v + 16 * c, vs, y + 16 * c, ys, last); break;
    case 3: context_tile<R, 3>(p, lds, n, v + 16 * c, vs, y + 16 * c, ys, last); break;
    case 4: context_tile<R, 4>(p, lds, n, v + 16 * c, vs, y + 16 * c, ys, last); break;
    default: break;
  }
}

using ContextRows = void (*)(const float*, int64_t, int64_t, const float*, int64_t, int64_t, float*,
                             int64_t);
constexpr ContextRows kContextRows[kRows + 1] = {nullptr,         context_rows<1>, context_rows<2>,
                                                 context_rows<3>, context_rows<4>, context_rows<5>,
                                                 context_rows<6>};

// exp of 16 lanes (fast_math.hpp's exp_v: 0 for -inf, the masked keys)
using Lanes16i = int32_t __attribute__((vector_size(64)));
inline __m512 exp16(__m512 x) {
  fastmath::exp_v<__m512, Lanes16i>(x);
  return x;
}

// dst[c * ldd + i] = src[i * lds + c] for a 16 x 16 block, in registers: pairs of rows
// interleaved, then 4-float, 128-bit and 256-bit pieces exchanged.
inline void transpose16(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * lds);
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // r[g + 0..3]: columns 4L + 0..3 of rows g..g+3 in 128-bit block L
#pragma GCC unroll 4
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
    r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
    r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // rows 0-7, then 8-15: blocks of columns c, c+8 / c+4, c+12
    t[c] = _mm512_shuffle_f32x4(r[c], r[c + 4], 0x88);
    t[c + 4] = _mm512_shuffle_f32x4(r[c], r[c + 4], 0xDD);
    t[c + 8] = _mm512_shuffle_f32x4(r[c + 8], r[c + 12], 0x88);
    t[c + 12] = _mm512_shuffle_f32x4(r[c + 8], r[c + 12], 0xDD);
  }
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) {  // whole columns c and c + 8
    _mm512_storeu_ps(dst + c * ldd, _mm512_shuffle_f32x4(t[c], t[c + 8], 0x88));
    _mm512_storeu_ps(dst + (c + 8) * ldd, _mm512_shuffle_f32x4(t[c], t[c + 8], 0xDD));
  }
}

// kt[e * ldk + j] = k[j * ks + e] for e < d, j < n; zero for n <= j < ldk.
void pack_keys(const float* k, int64_t ks, int64_t n, int64_t d, float* kt, int64_t ldk) {
  const int64_t n16 = n / 16 * 16, d16 = d / 16 * 16;
  for (int64_t j = 0; j < n16; j += 16)
    for (int64_t e = 0; e < d16; e += 16) transpose16(k + j * ks + e, ks, kt + e * ldk + j, ldk);
  for (int64_t j = 0; j < n; ++j)  // features past the whole blocks
    for (int64_t e = d16; e < d; ++e) kt[e * ldk + j] = k[j * ks + e];
  for (int64_t j = n16; j < n; ++j)  // keys past the whole blocks
    for (int64_t e = 0; e < d16; ++e) kt[e * ldk + j] = k[j * ks + e];
  for (int64_t e = 0; e < d; ++e)
    for (int64_t j = n; j < ldk; ++j) kt[e * ldk + j] = 0.0f;
}

}  // namespace

void scores(const float* q, int64_t qs, int64_t rows, const float* k, int64_t ks, int64_t n,
            int64_t d, float scale, float* kt, float* s, int64_t lds) {
  const int64_t ldk = padded(n);
  pack_keys(k, ks, n, d, kt, ldk);
  const int64_t vecs = ldk / 16;
  for (int64_t r = 0; r < rows; r += kRows) {
    const int64_t take = rows - r < kRows ? rows - r : kRows;
    kScoreRows[take](q + r * qs, qs, kt, ldk, d, vecs, scale, s + r * lds, lds);
  }
}

void context(const float* p, int64_t lds, int64_t rows, int64_t n, const float* v, int64_t vs,
             int64_t dv, float* y, int64_t ys) {
  if (dv <= 0) return;
  for (int64_t r = 0; r < rows; r += kRows) {
    const int64_t take = rows - r < kRows ? rows - r : kRows;
    kContextRows[take](p + r * lds, lds, n, v, vs, dv, y + r * ys, ys);
  }
}

void softmax_row(float* row, int64_t n) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int64_t whole = n / 16 * 16;
  const __mmask16 tail = lanes(n - whole);
  __m512 vmax = _mm512_set1_ps(neg_inf);
  for (int64_t j = 0; j < whole; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(row + j));
  if (tail) vmax = _mm512_mask_max_ps(vmax, tail, vmax, _mm512_maskz_loadu_ps(tail, row + whole));
  const float top = _mm512_reduce_max_ps(vmax);
  if (!(top > neg_inf)) {
    for (int64_t j = 0; j < n; ++j) row[j] = 0.0f;
    return;
  }
  const __m512 vtop = _mm512_set1_ps(top);
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t j = 0; j < whole; j += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), vtop));
    _mm512_storeu_ps(row + j, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  if (tail) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, row + whole), vtop));
    _mm512_mask_storeu_ps(row + whole, tail, e);
    vsum = _mm512_mask_add_ps(vsum, tail, vsum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int64_t j = 0; j < whole; j += 16)
    _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), inv));
  if (tail)
    _mm512_mask_storeu_ps(row + whole, tail,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, row + whole), inv));
}

}  // namespace attention_tiles
}  // namespace graphkiln
#pragma GCC pop_options
