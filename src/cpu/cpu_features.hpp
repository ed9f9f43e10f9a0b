// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What the CPU this process runs on can execute, read once: the kernels built twice (for
// AVX2 + FMA and for AVX-512) pick their build with these.
#pragma once

namespace graphkiln {
namespace cpu_features {

// AVX2 with FMA: the floor of every vectorized build
inline bool avx2_fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

// AVX-512 F, DQ, BW and VL (as the avx512 builds are compiled for), on top of AVX2 + FMA
inline bool avx512() {
  static const bool yes = avx2_fma() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return yes;
}

}  // namespace cpu_features
}  // namespace graphkiln
