// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "cpu/strided_copy.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>

namespace graphkiln {

namespace {

struct Dims {
  std::vector<int64_t> size, src, dst;
};

// Drop size-1 dims, order dims by destination stride (largest first) and merge dims that
// are contiguous in both layouts.
Dims simplify(const std::vector<int64_t>& dims, const std::vector<int64_t>& s,
              const std::vector<int64_t>& d) {
  std::vector<size_t> order;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d[a] > d[b]; });
  Dims out;
  for (size_t i : order) {
    if (!out.size.empty() && out.src.back() == s[i] * dims[i] && out.dst.back() == d[i] * dims[i]) {
      out.size.back() *= dims[i];
      out.src.back() = s[i];
      out.dst.back() = d[i];
      continue;
    }
    out.size.push_back(dims[i]);
    out.src.push_back(s[i]);
    out.dst.push_back(d[i]);
  }
  if (out.size.empty()) out = {{1}, {1}, {1}};
  return out;
}

template <typename T>
void copy_typed(const T* src, T* dst, const Dims& g) {
  const int rank = static_cast<int>(g.size.size());
  const int64_t inner = g.size[rank - 1];
  const int64_t ss = g.src[rank - 1], ds = g.dst[rank - 1];
  int64_t outer = 1;
  for (int i = 0; i < rank - 1; ++i) outer *= g.size[i];
  // 2-D tile transposes for the common case of a swap of the last two dims
  if (rank >= 2 && ds == 1 && g.src[rank - 2] == 1 && inner >= 8 && g.size[rank - 2] >= 8) {
    const int64_t rows = g.size[rank - 2], rs = g.src[rank - 1], rd = g.dst[rank - 2];
    int64_t batches = outer / rows;
    constexpr int64_t B = 16;
    const int64_t tiles_r = (rows + B - 1) / B, tiles_c = (inner + B - 1) / B;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t t = 0; t < tiles_r * tiles_c; ++t) {
        int64_t rem = b, so = 0, doff = 0;
        for (int i = rank - 3; i >= 0; --i) {
          const int64_t idx = rem % g.size[i];
          rem /= g.size[i];
          so += idx * g.src[i];
          doff += idx * g.dst[i];
        }
        const int64_t r0 = (t / tiles_c) * B, c0 = (t % tiles_c) * B;
        const int64_t r1 = std::min(rows, r0 + B), c1 = std::min(inner, c0 + B);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) dst[doff + r * rd + c] = src[so + r + c * rs];
      }
    return;
  }
#pragma omp parallel for schedule(static) if (outer * inner > 32768)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, so = 0, doff = 0;
    for (int i = rank - 2; i >= 0; --i) {
      const int64_t idx = rem % g.size[i];
      rem /= g.size[i];
      so += idx * g.src[i];
      doff += idx * g.dst[i];
    }
    const T* s = src + so;
    T* d = dst + doff;
    if (ss == 1 && ds == 1) {
      std::memcpy(d, s, sizeof(T) * inner);
    } else {
      for (int64_t k = 0; k < inner; ++k) d[k * ds] = s[k * ss];
    }
  }
}

}  // namespace

void strided_copy(const void* src, void* dst, size_t elem_size, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& src_strides,
                  const std::vector<int64_t>& dst_strides) {
  for (int64_t d : dims)
    if (d == 0) return;
  const Dims g = simplify(dims, src_strides, dst_strides);
  switch (elem_size) {
    case 1: copy_typed(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), g); break;
    case 2: copy_typed(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), g); break;
    case 4: copy_typed(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), g); break;
    default: copy_typed(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), g); break;
  }
}

}  // namespace graphkiln
