// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The pointwise program interpreter, baseline x86-64 build, and the run-time choice between
// it and the AVX2 / AVX-512 builds (pointwise_eval_avx2.cpp, pointwise_eval_avx512.cpp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// FP exceptions are never inspected: let the vectorizer if-convert float selects.
#pragma GCC optimize("no-trapping-math")
#include "cpu/cpu_features.hpp"
#include "cpu/fast_math.hpp"
#include "cpu/pointwise_program.hpp"

#define PW_EVAL_NS pw_generic
#include "cpu/pointwise_eval.inc"
#undef PW_EVAL_NS

namespace graphkiln {

void pw_eval_f32_avx2(const PwInstr* prog, int count, float* const* regs, int64_t n);
void pw_eval_f64_avx2(const PwInstr* prog, int count, double* const* regs, int64_t n);
void pw_eval_f32_avx512(const PwInstr* prog, int count, float* const* regs, int64_t n);
void pw_eval_f64_avx512(const PwInstr* prog, int count, double* const* regs, int64_t n);

void pw_eval_f32(const PwInstr* prog, int count, float* const* regs, int64_t n) {
  if (cpu_features::avx512()) return pw_eval_f32_avx512(prog, count, regs, n);
  if (cpu_features::avx2_fma()) return pw_eval_f32_avx2(prog, count, regs, n);
  pw_generic::eval<float>(prog, count, regs, n);
}

void pw_eval_f64(const PwInstr* prog, int count, double* const* regs, int64_t n) {
  if (cpu_features::avx512()) return pw_eval_f64_avx512(prog, count, regs, n);
  if (cpu_features::avx2_fma()) return pw_eval_f64_avx2(prog, count, regs, n);
  pw_generic::eval<double>(prog, count, regs, n);
}

}  // namespace graphkiln
