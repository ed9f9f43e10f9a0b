// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// How many GEMMs ran as one cuBLASLt call with their epilogue in this process (blas_lt.hip):
// host code without the GPU headers (the Python bindings) may include this.
#pragma once

#include <cstdint>

namespace graphkiln {
namespace gpu {

uint64_t lt_gemm_calls();

}  // namespace gpu
}  // namespace graphkiln
