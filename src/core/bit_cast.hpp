// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// bit_as<To>(from): the bits of `from` read as a `To` of the same size (std::bit_cast, which
// is C++20; GCC 10, the compiler of the manylinux-floor wheels, lacks even the builtin).
// memcpy of a fixed size compiles to a register move, vector types included.
#pragma once

#include <cstring>

namespace graphkiln {

template <typename To, typename From>
__attribute__((always_inline)) inline To bit_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_as: the two types differ in size");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

}  // namespace graphkiln
