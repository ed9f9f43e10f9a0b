// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The Winograd F(4x4, 3x3) inner loops (winograd_f43.inc) compiled for AVX-512 (16 floats a
// vector); winograd_conv.cpp calls them on CPUs that have it.
// The standard and project headers come first, outside the target pragma, so that no inline
// function they define is compiled for this ISA alone.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/winograd_conv.hpp"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,prefer-vector-width=512")
#define WINO_NS f43_avx512
#define WINO_LANES 16
#include "cpu/winograd_f43.inc"
#undef WINO_LANES
#undef WINO_NS

namespace graphkiln {
namespace winograd {

void inputs_avx512(const Problem& p, int64_t t0, int64_t count, float* v) {
  f43_avx512::inputs(p, t0, count, v);
}

void products_avx512(const Problem& p, int64_t t0, int64_t count, int64_t chunk0, int64_t chunk1,
                     const float* v, float* m) {
  f43_avx512::products(p, t0, count, chunk0, chunk1, v, m);
}

}  // namespace winograd
}  // namespace graphkiln
#pragma GCC pop_options
