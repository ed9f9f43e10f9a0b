// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The recurrent gate math (rnn_cell.inc) compiled for AVX2 + FMA (chosen at run time).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

// FP exceptions are never inspected: let the vectorizer if-convert float selects.
#pragma GCC optimize("no-trapping-math")
#include "cpu/rnn_cell.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "cpu/fast_math.hpp"
#define RNN_CELL_NS rnn_avx2
#define RNN_CELL_AVX2 1
#include "cpu/rnn_cell.inc"
#undef RNN_CELL_AVX2
#undef RNN_CELL_NS

namespace graphkiln {

const RnnCellOps<float>& rnn_cell_ops_f32_avx2() { return rnn_avx2::ops<float>(); }
const RnnCellOps<double>& rnn_cell_ops_f64_avx2() { return rnn_avx2::ops<double>(); }

}  // namespace graphkiln
#pragma GCC pop_options
