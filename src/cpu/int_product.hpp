// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Shared parts of the integer product kernels (int_matmul.cpp: MatMulInteger, QLinearMatMul;
// int_conv.cpp: ConvInteger, QLinearConv): 8-bit values (i8 / u8) read as int32, sums that
// wrap modulo 2^32 like the ref target's int64 -> int32 cast, scales of any float dtype read
// as double, and the requantization of a real value to an 8-bit output (round half to even,
// plus the zero point, saturated to the type's range: ref's to_quantized).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/tensor.hpp"
#include "cpu/select_values.hpp"

namespace graphkiln {
namespace int_product {

inline bool is_8bit(DType t) { return t == DType::i8 || t == DType::u8; }
inline bool is_float(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

// element i of an i8 / u8 tensor
inline int32_t load8(const void* p, bool is_signed, int64_t i) {
  return is_signed ? static_cast<const int8_t*>(p)[i] : static_cast<const uint8_t*>(p)[i];
}

// acc + v modulo 2^32 (no signed overflow)
inline int32_t wrap_add(int32_t acc, int32_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(v));
}

// element i of a float tensor (f32, f64, f16, bf16) as double (exact)
inline double load_scale(DType dtype, const void* p, int64_t i) {
  return select_values::as_double(dtype, p, i);
}

// An 8-bit output: saturate(round_half_to_even(real) + zero_point).
struct Requantizer {
  bool is_signed = false;
  double zero_point = 0, low = 0, high = 255;

  Requantizer() = default;
  Requantizer(DType out, double zp)
      : is_signed(out == DType::i8), zero_point(zp), low(is_signed ? -128 : 0),
        high(is_signed ? 127 : 255) {}

  void store(void* y, int64_t i, double real) const {
    double q = std::nearbyint(real) + zero_point;
    q = q < low ? low : (q > high ? high : q);
    if (is_signed) static_cast<int8_t*>(y)[i] = static_cast<int8_t>(q);
    else static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(q);
  }
};

}  // namespace int_product
}  // namespace graphkiln
