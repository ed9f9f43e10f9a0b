// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "cpu/strided_copy.hpp"

#include <emmintrin.h>
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace graphkiln {

namespace {
constexpr int kMaxRank = 64;
}

// Drop size-1 dims, order dims by destination stride (largest first) and merge dims that
// are contiguous in both layouts. A tiled transpose is used when the destination's
// innermost dim is strided in the source and another dim is contiguous there.
StridedCopy::StridedCopy(size_t elem_size, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& s, const std::vector<int64_t>& d)
    : elem_(elem_size) {
  empty_ = false;
  for (int64_t n : dims)
    if (n == 0) empty_ = true;
  if (empty_) return;
  std::vector<size_t> order;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::llabs(d[a]) > std::llabs(d[b]); });
  for (size_t i : order) {
    if (!size_.empty() && src_.back() == s[i] * dims[i] && dst_.back() == d[i] * dims[i]) {
      size_.back() *= dims[i];
      src_.back() = s[i];
      dst_.back() = d[i];
      continue;
    }
    size_.push_back(dims[i]);
    src_.push_back(s[i]);
    dst_.push_back(d[i]);
  }
  if (size_.empty()) size_ = {1}, src_ = {1}, dst_ = {1};
  if (size_.size() > static_cast<size_t>(kMaxRank))
    throw std::invalid_argument("strided copy of more than 64 dims");
  const int rank = static_cast<int>(size_.size());
  if (rank >= 2 && rank <= kMaxRank && dst_[rank - 1] == 1 && src_[rank - 1] != 1 &&
      size_[rank - 1] >= 2) {
    for (int i = rank - 2; i >= 0; --i)
      if (src_[i] == 1 && size_[i] >= 4) {
        tile_ = i;
        break;
      }
  }
  if (tile_ >= 0)
    for (int i = 0; i < rank - 1; ++i)
      if (i != tile_) batch_.push_back(i);
}

void StridedCopy::extent(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                         int64_t* lo, int64_t* hi) {
  *lo = *hi = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) {
      *lo = *hi = 0;
      return;
    }
    const int64_t span = (dims[i] - 1) * strides[i];
    (span < 0 ? *lo : *hi) += span;
  }
}

namespace {

// dst[r * rd + c] = src[r + c * ss] for r in [r0, r1), c in [c0, c1)
template <typename T>
inline void transpose_scalar(const T* src, T* dst, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                             int64_t ss, int64_t rd) {
  for (int64_t r = r0; r < r1; ++r) {
    T* d = dst + r * rd;
    const T* s = src + r;
    for (int64_t c = c0; c < c1; ++c) d[c] = s[c * ss];
  }
}

template <typename T>
inline void transpose_tile(const T* src, T* dst, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                           int64_t ss, int64_t rd) {
  transpose_scalar(src, dst, r0, r1, c0, c1, ss, rd);
}

// 4-byte elements: 4x4 blocks through SSE registers (any x86-64), scalar edges
template <>
inline void transpose_tile<uint32_t>(const uint32_t* src, uint32_t* dst, int64_t r0, int64_t r1,
                                     int64_t c0, int64_t c1, int64_t ss, int64_t rd) {
  const int64_t r4 = r0 + (r1 - r0) / 4 * 4, c4 = c0 + (c1 - c0) / 4 * 4;
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  for (int64_t c = c0; c < c4; c += 4)
    for (int64_t r = r0; r < r4; r += 4) {
      __m128 a0 = _mm_loadu_ps(s + c * ss + r);
      __m128 a1 = _mm_loadu_ps(s + (c + 1) * ss + r);
      __m128 a2 = _mm_loadu_ps(s + (c + 2) * ss + r);
      __m128 a3 = _mm_loadu_ps(s + (c + 3) * ss + r);
      _MM_TRANSPOSE4_PS(a0, a1, a2, a3);
      _mm_storeu_ps(d + r * rd + c, a0);
      _mm_storeu_ps(d + (r + 1) * rd + c, a1);
      _mm_storeu_ps(d + (r + 2) * rd + c, a2);
      _mm_storeu_ps(d + (r + 3) * rd + c, a3);
    }
  if (r4 < r1) transpose_scalar(src, dst, r4, r1, c0, c1, ss, rd);
  if (c4 < c1) transpose_scalar(src, dst, r0, r4, c4, c1, ss, rd);
}

// 8-byte elements: 2x2 blocks
template <>
inline void transpose_tile<uint64_t>(const uint64_t* src, uint64_t* dst, int64_t r0, int64_t r1,
                                     int64_t c0, int64_t c1, int64_t ss, int64_t rd) {
  const int64_t r2 = r0 + (r1 - r0) / 2 * 2, c2 = c0 + (c1 - c0) / 2 * 2;
  const double* s = reinterpret_cast<const double*>(src);
  double* d = reinterpret_cast<double*>(dst);
  for (int64_t c = c0; c < c2; c += 2)
    for (int64_t r = r0; r < r2; r += 2) {
      const __m128d a0 = _mm_loadu_pd(s + c * ss + r);
      const __m128d a1 = _mm_loadu_pd(s + (c + 1) * ss + r);
      _mm_storeu_pd(d + r * rd + c, _mm_unpacklo_pd(a0, a1));
      _mm_storeu_pd(d + (r + 1) * rd + c, _mm_unpackhi_pd(a0, a1));
    }
  if (r2 < r1) transpose_scalar(src, dst, r2, r1, c0, c1, ss, rd);
  if (c2 < c1) transpose_scalar(src, dst, r0, r2, c2, c1, ss, rd);
}

}  // namespace

template <typename T>
void StridedCopy::run_typed(const T* src, T* dst) const {
  const int rank = static_cast<int>(size_.size());
  const int64_t inner = size_[rank - 1];
  const int64_t ss = src_[rank - 1], ds = dst_[rank - 1];
  int64_t outer = 1;
  for (int i = 0; i < rank - 1; ++i) outer *= size_[i];
  if (tile_ >= 0) {
    // tiles of (rows of dim tile_, contiguous in the source) x (inner, contiguous in dst)
    constexpr int64_t B = 32;
    const int64_t BR = inner >= B ? B : 256 / inner;  // taller tiles for a narrow inner dim
    const int64_t rows = size_[tile_], rd = dst_[tile_];
    const int64_t batches = outer / rows;
    const int64_t tiles_r = (rows + BR - 1) / BR, tiles_c = (inner + B - 1) / B;
    const int64_t tiles = tiles_r * tiles_c;
    const int nb = static_cast<int>(batch_.size());
#pragma omp parallel for schedule(static) if (outer * inner > kParallelElems)
    for (int64_t w = 0; w < batches * tiles; ++w) {
      int64_t rem = w / tiles, so = 0, doff = 0;
      const int64_t t = w % tiles;
      for (int j = nb - 1; j >= 0; --j) {
        const int i = batch_[j];
        const int64_t idx = rem % size_[i];
        rem /= size_[i];
        so += idx * src_[i];
        doff += idx * dst_[i];
      }
      const int64_t r0 = (t / tiles_c) * BR, c0 = (t % tiles_c) * B;
      const int64_t r1 = std::min(rows, r0 + BR), c1 = std::min(inner, c0 + B);
      transpose_tile(src + so, dst + doff, r0, r1, c0, c1, ss, rd);
    }
    return;
  }
  // rows of the innermost dim; each thread walks its share of rows with an index counter
  const int nth = (outer * inner > kParallelElems && outer > 1) ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(nth) if (nth > 1)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = outer * t / nt, end = outer * (t + 1) / nt;
    int64_t idx[kMaxRank];
    int64_t rem = begin, so = 0, doff = 0;
    for (int i = rank - 2; i >= 0; --i) {
      idx[i] = rem % size_[i];
      rem /= size_[i];
      so += idx[i] * src_[i];
      doff += idx[i] * dst_[i];
    }
    for (int64_t o = begin; o < end; ++o) {
      const T* s = src + so;
      T* d = dst + doff;
      if (ss == 1 && ds == 1) {
        std::memcpy(d, s, sizeof(T) * inner);
      } else if (ss == 0 && ds == 1) {
        const T v = *s;
        for (int64_t k = 0; k < inner; ++k) d[k] = v;
      } else if (ds == 1) {
        for (int64_t k = 0; k < inner; ++k) d[k] = s[k * ss];
      } else {
        for (int64_t k = 0; k < inner; ++k) d[k * ds] = s[k * ss];
      }
      for (int i = rank - 2; i >= 0; --i) {  // next row
        so += src_[i];
        doff += dst_[i];
        if (++idx[i] < size_[i]) break;
        so -= idx[i] * src_[i];
        doff -= idx[i] * dst_[i];
        idx[i] = 0;
      }
    }
  }
}

void StridedCopy::run(const void* src, void* dst) const {
  if (empty_) return;
  switch (elem_) {
    case 1: run_typed(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst)); break;
    case 2: run_typed(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst)); break;
    case 4: run_typed(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst)); break;
    default: run_typed(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst)); break;
  }
}

void strided_copy(const void* src, void* dst, size_t elem_size, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& src_strides,
                  const std::vector<int64_t>& dst_strides) {
  StridedCopy(elem_size, dims, src_strides, dst_strides).run(src, dst);
}

}  // namespace graphkiln
