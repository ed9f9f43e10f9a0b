// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Division of 32-bit indices below 2^31 by a divisor fixed at build time: a multiply-high, an
// add and a shift instead of a division (Granlund and Montgomery's round-up method). Index
// math of elementwise kernels is otherwise bound by 64-bit divisions on GPUs.
#pragma once

#include <cstdint>

#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {

struct FastDiv {
  uint32_t d = 1, magic = 1, shift = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t divisor) : d(divisor) {
    while ((uint64_t{1} << shift) < divisor) ++shift;
    magic = static_cast<uint32_t>(
        ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - divisor)) / divisor + 1);
  }
  __device__ uint32_t div(uint32_t n) const { return (__umulhi(n, magic) + n) >> shift; }
};

}  // namespace gpu
}  // namespace graphkiln
