// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "cpu/strided_copy.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>

namespace graphkiln {

namespace {
constexpr int64_t kParallelElems = 32768;
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
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::llabs(d[a]) > std::llabs(d[b]);
  });
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
  const int rank = static_cast<int>(size_.size());
  if (rank >= 2 && dst_[rank - 1] == 1 && src_[rank - 1] != 1 && size_[rank - 1] >= 4) {
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

template <typename T>
void StridedCopy::run_typed(const T* src, T* dst) const {
  const int rank = static_cast<int>(size_.size());
  const int64_t inner = size_[rank - 1];
  const int64_t ss = src_[rank - 1], ds = dst_[rank - 1];
  int64_t outer = 1;
  for (int i = 0; i < rank - 1; ++i) outer *= size_[i];
  if (tile_ >= 0) {
    // tiles of (rows of dim tile_, contiguous in the source) x (inner, contiguous in dst)
    constexpr int64_t B = 16;
    const int64_t rows = size_[tile_], rd = dst_[tile_];
    const int64_t batches = outer / rows;
    const int64_t tiles_r = (rows + B - 1) / B, tiles_c = (inner + B - 1) / B;
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
      const int64_t r0 = (t / tiles_c) * B, c0 = (t % tiles_c) * B;
      const int64_t r1 = std::min(rows, r0 + B), c1 = std::min(inner, c0 + B);
      for (int64_t r = r0; r < r1; ++r) {
        T* d = dst + doff + r * rd;
        const T* s = src + so + r;
        for (int64_t c = c0; c < c1; ++c) d[c] = s[c * ss];
      }
    }
    return;
  }
#pragma omp parallel for schedule(static) if (outer * inner > kParallelElems)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, so = 0, doff = 0;
    for (int i = rank - 2; i >= 0; --i) {
      const int64_t idx = rem % size_[i];
      rem /= size_[i];
      so += idx * src_[i];
      doff += idx * dst_[i];
    }
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
