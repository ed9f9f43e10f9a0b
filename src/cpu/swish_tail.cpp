// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "cpu/swish_tail.hpp"

#include <algorithm>
#include <numeric>

#include "cpu/fast_math.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelElems = 1 << 15;
constexpr int64_t kChunk = 1 << 12;  // elements of a contiguous run one task takes

__attribute__((target_clones("avx512f", "avx2", "default"))) void swish_run(float* x, int64_t n,
                                                                            float alpha) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * fastmath::sigmoid(alpha * x[i]);
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
