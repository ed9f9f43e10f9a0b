// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Half-precision element types for kernels templated on their element type (float, F16,
// BF16): storage is the raw 16 bits, arithmetic is always float (load_float / store_float,
// round to nearest even like numpy and ml_dtypes), and a host-side dispatch from a DType.
#pragma once

#include <cstdint>

#include "core/tensor.hpp"
#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

__device__ inline float load_float(float v) { return v; }

// float16 <-> float: the hardware conversions (round to nearest even, subnormals kept);
// elsewhere the same rounding in integer arithmetic
#if defined(__CUDACC__) && !defined(__HIP__)
__device__ inline float load_float(F16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
#elif defined(__HIP__)
__device__ inline float load_float(F16 h) {
  return static_cast<float>(__builtin_bit_cast(_Float16, h.bits));
}
#else
__device__ inline float load_float(F16 h) {
  const uint32_t sign = (h.bits & 0x8000u) << 16, exp = (h.bits >> 10) & 0x1fu,
                 mant = h.bits & 0x3ffu;
  if (exp == 0) {
    const float v = ldexpf(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  const uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                                  : (sign | ((exp + 112) << 23) | (mant << 13));
  return __uint_as_float(bits);
}
#endif

__device__ inline float load_float(BF16 h) { return __uint_as_float(uint32_t(h.bits) << 16); }

template <typename T>
__device__ inline T store_float(float f);

template <>
__device__ inline float store_float<float>(float f) {
  return f;
}

template <>
__device__ inline F16 store_float<F16>(float f) {
#if defined(__CUDACC__) && !defined(__HIP__)
  uint16_t bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f));
  return F16{bits};
#elif defined(__HIP__)
  return F16{__builtin_bit_cast(uint16_t, static_cast<_Float16>(f))};
#else
  const uint32_t x = __float_as_uint(f);
  const uint32_t sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return F16{static_cast<uint16_t>(sign | 0x7e00u)};   // NaN
  if (mag >= 0x477ff000u) return F16{static_cast<uint16_t>(sign | 0x7c00u)};  // overflow
  if (mag < 0x38800000u)  // subnormal half: a multiple of 2^-24
    return F16{static_cast<uint16_t>(sign | static_cast<uint32_t>(rintf(fabsf(f) * 16777216.0f)))};
  return F16{
      static_cast<uint16_t>(sign | ((mag - (112u << 23) + 0xfffu + ((mag >> 13) & 1u)) >> 13))};
#endif
}

template <>
__device__ inline BF16 store_float<BF16>(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return BF16{static_cast<uint16_t>((x | 0x00400000u) >> 16)};
  return BF16{static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}

inline bool is_float_type(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

// fn(T{}) with T the element type of a float32 / float16 / bfloat16 DType; false otherwise.
template <typename Fn>
bool dispatch_float(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32: fn(float{}); return true;
    case DType::f16: fn(F16{}); return true;
    case DType::bf16: fn(BF16{}); return true;
    default: return false;
  }
}

}  // namespace gpu
}  // namespace graphkiln
