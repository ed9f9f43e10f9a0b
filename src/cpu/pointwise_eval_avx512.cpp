// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The pointwise program interpreter compiled for AVX-512 (chosen at run time on CPUs that have it).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// FP exceptions are never inspected: let the vectorizer if-convert float selects.
#pragma GCC optimize("no-trapping-math")
#include "cpu/pointwise_program.hpp"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,prefer-vector-width=512")
#include "cpu/fast_math.hpp"
#define PW_EVAL_NS pw_avx512
#include "cpu/pointwise_eval.inc"
#undef PW_EVAL_NS

namespace graphkiln {

void pw_eval_f32_avx512(const PwInstr* prog, int count, float* const* regs, int64_t n) {
  pw_avx512::eval<float>(prog, count, regs, n);
}

void pw_eval_f64_avx512(const PwInstr* prog, int count, double* const* regs, int64_t n) {
  pw_avx512::eval<double>(prog, count, regs, n);
}

}  // namespace graphkiln
#pragma GCC pop_options
