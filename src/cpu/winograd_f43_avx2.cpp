// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The Winograd F(4x4, 3x3) inner loops (winograd_f43.inc) compiled for AVX2 (8 floats a vector);
// winograd_conv.cpp calls them on CPUs that have it.
// The standard and project headers come first, outside the target pragma, so that no inline
// function they define is compiled for this ISA alone.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/winograd_conv.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define WINO_NS f43_avx2
#define WINO_LANES 8
#include "cpu/winograd_f43.inc"
#undef WINO_LANES
#undef WINO_NS

namespace graphkiln {
namespace winograd {

void inputs_avx2(const Problem& p, int64_t t0, int64_t count, float* v) {
  f43_avx2::inputs(p, t0, count, v);
}

void products_avx2(const Problem& p, int64_t t0, int64_t count, int64_t chunk0, int64_t chunk1,
                   const float* v, float* m) {
  f43_avx2::products(p, t0, count, chunk0, chunk1, v, m);
}

}  // namespace winograd
}  // namespace graphkiln
#pragma GCC pop_options
