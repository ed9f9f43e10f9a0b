// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
//
// Every .hip source includes this first: the HIP runtime on AMD, the CUDA runtime behind
// graphkiln's HIP-name shim on NVIDIA.
#pragma once

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#define GRAPHKILN_GPU_TOOLKIT "HIP"
#define GRAPHKILN_GPU_TOOLKIT_MAJOR HIP_VERSION_MAJOR
#define GRAPHKILN_GPU_TOOLKIT_MINOR HIP_VERSION_MINOR
#define GRAPHKILN_GPU_TOOLKIT_PATCH HIP_VERSION_PATCH
#elif defined(__CUDACC__)
#include "gpu/hip_compat.hpp"
#else
#error \
    "gpu/common.hpp: unknown GPU platform (compile .hip sources as HIP with clang or as CUDA with nvcc)"
#endif  // __HIP__ || __HIP_PLATFORM_AMD__
