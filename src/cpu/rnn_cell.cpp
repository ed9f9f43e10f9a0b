// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The recurrent gate math (rnn_cell.inc), baseline x86-64 build, and the run-time choice
// between it and the AVX2 + FMA build (rnn_cell_avx2.cpp).
#include "cpu/rnn_cell.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

// FP exceptions are never inspected: let the vectorizer if-convert float selects.
#pragma GCC optimize("no-trapping-math")
#include "cpu/cpu_features.hpp"
#include "cpu/fast_math.hpp"

#define RNN_CELL_NS rnn_generic
#include "cpu/rnn_cell.inc"
#undef RNN_CELL_NS

namespace graphkiln {

const RnnCellOps<float>& rnn_cell_ops_f32_generic() { return rnn_generic::ops<float>(); }
const RnnCellOps<double>& rnn_cell_ops_f64_generic() { return rnn_generic::ops<double>(); }

const RnnCellOps<float>& rnn_cell_ops_f32() {
  return cpu_features::avx2_fma() ? rnn_cell_ops_f32_avx2() : rnn_cell_ops_f32_generic();
}

const RnnCellOps<double>& rnn_cell_ops_f64() {
  return cpu_features::avx2_fma() ? rnn_cell_ops_f64_avx2() : rnn_cell_ops_f64_generic();
}

}  // namespace graphkiln
