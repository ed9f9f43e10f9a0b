// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Branch-free float math the compiler can vectorize (exp, tanh, erf, sigmoid, gelu), a few
// ulp from the libm results. Every function is `static inline` so that a translation unit
// compiled for AVX2 (pointwise_eval_avx2.cpp) gets its own copies and never shares them.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/bit_cast.hpp"
#include "core/half_float.hpp"

namespace graphkiln {
namespace fastmath {

__attribute__((always_inline)) static inline float as_float(int32_t i) { return bit_as<float>(i); }
__attribute__((always_inline)) static inline int32_t as_int(float f) { return bit_as<int32_t>(f); }

// exp(x): exact-ish to ~1 ulp on [-86.5, 88.7]; 0 below, inf above, NaN stays NaN.
__attribute__((always_inline)) static inline float exp(float x) {
  float xc = x < -86.5f ? -86.5f : x;
  xc = xc > 88.72f ? 88.72f : xc;
  // n = round(x / ln2) via the 1.5 * 2^23 trick (t's low mantissa bits hold n)
  float t = xc * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  int32_t ni = as_int(t) - 0x4B400000;
  float scale = as_float(static_cast<int32_t>(static_cast<uint32_t>(ni + 126) << 23));  // 2^(n-1)
  float result = y * scale * 2.0f;
  result = x < -86.5f ? 0.0f : result;
  result = x > 88.72f ? __builtin_inff() : result;
  return result;
}

__attribute__((always_inline)) static inline float sigmoid(float x) {
  return 1.0f / (1.0f + exp(-x));
}

__attribute__((always_inline)) static inline float tanh(float x) {
  float ax = x < 0 ? -x : x;
  float x2 = x * x;
  // odd Taylor series for |x| < 0.4
  float p = -929569.0f / 638512875.0f;
  p = p * x2 + 21844.0f / 6081075.0f;
  p = p * x2 - 1382.0f / 155925.0f;
  p = p * x2 + 62.0f / 2835.0f;
  p = p * x2 - 17.0f / 315.0f;
  p = p * x2 + 2.0f / 15.0f;
  p = p * x2 - 1.0f / 3.0f;
  float small = x + x * x2 * p;
  float e = exp(-2.0f * ax);
  float big = (1.0f - e) / (1.0f + e);
  big = x < 0 ? -big : big;
  float result = ax < 0.4f ? small : big;
  return x != x ? x : result;
}

// erf: Taylor series below 0.5, Abramowitz-Stegun 7.1.26 above (abs error < 2e-7).
__attribute__((always_inline)) static inline float erf(float x) {
  float ax = x < 0 ? -x : x;
  float x2 = x * x;
  float p = 1.0f / 9360.0f;
  p = p * x2 - 1.0f / 1320.0f;
  p = p * x2 + 1.0f / 216.0f;
  p = p * x2 - 1.0f / 42.0f;
  p = p * x2 + 1.0f / 10.0f;
  p = p * x2 - 1.0f / 3.0f;
  float small = 1.12837916709551257f * (x + x * x2 * p);
  float t = 1.0f / (1.0f + 0.3275911f * ax);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  float big = 1.0f - q * t * exp(-x2);
  big = x < 0 ? -big : big;
  float result = ax < 0.5f ? small : big;
  return x != x ? x : result;
}

__attribute__((always_inline)) static inline float gelu(float x) {
  return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f));
}

__attribute__((always_inline)) static inline float gelu_tanh(float x) {
  float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanh(inner));
}

// x = exp(x) on a GCC vector of floats (V) with a matching int vector (VI): the same steps
// as exp() above, for loops the compiler does not vectorize on its own (reductions). In
// place, as vectors wider than the baseline ISA must not be passed by value.
template <typename V, typename VI>
__attribute__((always_inline)) static inline void exp_v(V& x) {
  const V lo = V{} - 86.5f, hi = V{} + 88.72f;
  V xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  V t = xc * 1.44269504088896341f + 12582912.0f;
  V n = t - 12582912.0f;
  V r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  V y = p * r * r + r + 1.0f;
  VI ni = bit_as<VI>(t) - 0x4B400000;
  V scale = bit_as<V>((ni + 126) << 23);
  V result = y * scale * 2.0f;
  result = x < lo ? V{} : result;
  result = x > hi ? V{} + __builtin_inff() : result;
  x = result;
}

}  // namespace fastmath
}  // namespace graphkiln
