// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Half: the IEEE binary16 element type of f16 tensors on the host. `_Float16` where the
// compiler has it (GCC 12+, clang); otherwise (GCC 10, the compiler of the manylinux-floor
// wheels, cmake/toolchains/sysroot.cmake) a 16-bit struct converting through float in
// software, round to nearest even like the hardware conversions.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/bit_cast.hpp"

namespace graphkiln {

inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = bit_as<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (ax < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), in units of 2^-24
    const float units = std::nearbyint(bit_as<float>(ax) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
  }
  const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);  // to nearest even at bit 13
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float v = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    return sign ? -v : v;
  }
  if (exponent == 31) return bit_as<float>(sign | 0x7f800000u | (mantissa << 13));
  return bit_as<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

#if defined(__FLT16_MAX__)
using Half = _Float16;
#else
struct Half {
  uint16_t bits;
  Half() = default;
  Half(float f) : bits(float_to_half_bits(f)) {}  // NOLINT: converts like _Float16
  operator float() const { return half_bits_to_float(bits); }  // NOLINT
};
static_assert(sizeof(Half) == 2, "Half is two bytes");
#endif

}  // namespace graphkiln
