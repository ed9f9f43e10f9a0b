// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Element values for the selection kernels (unique.cpp, select.cpp): an element of any
// core dtype read as a comparable number (floats, float16 and bfloat16 stored as 16-bit
// included, as double: exact for all of them; integers as int64 / uint64) and whether it
// is non-zero.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/tensor.hpp"

namespace graphkiln {
namespace select_values {

inline float bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &wide, sizeof out);
  return out;
}

inline float f16_to_float(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return static_cast<float>(sign * std::ldexp(mantissa, -24));
  if (exponent == 31) return mantissa ? NAN : static_cast<float>(sign * INFINITY);
  return static_cast<float>(sign * std::ldexp(mantissa + 1024, exponent - 25));
}

// A tensor as [outer, n, inner] around `axis` (axis < 0: flattened, outer = inner = 1).
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
  AxisSplit(const TensorInfo& x, int64_t axis) {
    if (axis < 0) {
      n = x.numel();
      return;
    }
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims[d];
    n = x.dims[axis];
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dims[d];
  }
};

template <typename T>
T read(const void* data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

// The kind of number an element is compared as.
enum class Kind { floating, signed_int, unsigned_int };

inline Kind kind_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16: return Kind::floating;
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::u64:
    case DType::boolean: return Kind::unsigned_int;
    default: return Kind::signed_int;
  }
}

inline double as_double(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::f32: return read<float>(data, i);
    case DType::f64: return read<double>(data, i);
    case DType::f16: return f16_to_float(read<uint16_t>(data, i));
    default: return bf16_to_float(read<uint16_t>(data, i));
  }
}

inline int64_t as_int64(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::i8: return read<int8_t>(data, i);
    case DType::i16: return read<int16_t>(data, i);
    case DType::i32: return read<int32_t>(data, i);
    default: return read<int64_t>(data, i);
  }
}

inline uint64_t as_uint64(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::u8:
    case DType::boolean: return read<uint8_t>(data, i);
    case DType::u16: return read<uint16_t>(data, i);
    case DType::u32: return read<uint32_t>(data, i);
    default: return read<uint64_t>(data, i);
  }
}

// Whether element i is not zero (NaN is not zero; -0.0 is)
inline bool nonzero(DType dtype, const void* data, int64_t i) {
  switch (kind_of(dtype)) {
    case Kind::floating:
      if (dtype == DType::f16 || dtype == DType::bf16)
        return (read<uint16_t>(data, i) & 0x7fff) != 0;
      return as_double(dtype, data, i) != 0.0;  // NaN != 0
    case Kind::signed_int: return as_int64(dtype, data, i) != 0;
    default: return as_uint64(dtype, data, i) != 0;
  }
}

}  // namespace select_values
}  // namespace graphkiln
