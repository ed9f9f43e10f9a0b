// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The pointwise program interpreter compiled for AVX2 + FMA (chosen at run time).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// FP exceptions are never inspected: let the vectorizer if-convert float selects.
#pragma GCC optimize("no-trapping-math")
#include "cpu/pointwise_program.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "cpu/fast_math.hpp"
#define PW_EVAL_NS pw_avx2
#include "cpu/pointwise_eval.inc"
#undef PW_EVAL_NS

namespace graphkiln {

void pw_eval_f32_avx2(const PwInstr* prog, int count, float* const* regs, int64_t n) {
  pw_avx2::eval<float>(prog, count, regs, n);
}

void pw_eval_f64_avx2(const PwInstr* prog, int count, double* const* regs, int64_t n) {
  pw_avx2::eval<double>(prog, count, regs, n);
}

}  // namespace graphkiln
#pragma GCC pop_options
