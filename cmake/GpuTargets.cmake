# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
#
# GPU_TARGETS decides the GPU platform. Empty = CPU-only build (the only flavour this
# version builds). Never a silent build-host default: a non-empty value is an error until
# the GPU target and its packaging land.
set(GPU_TARGETS "" CACHE STRING "GPU ISAs to build for (empty = CPU only)")
if(NOT GPU_TARGETS AND AMDGPU_TARGETS)
  set(GPU_TARGETS "${AMDGPU_TARGETS}")
endif()

if(GPU_TARGETS)
  message(FATAL_ERROR
    "GPU_TARGETS='${GPU_TARGETS}': this version of graphkiln builds the CPU flavour only. "
    "Accepted: an empty GPU_TARGETS.")
endif()

set(GRAPHKILN_GPU_PLATFORM "none")
set(GRAPHKILN_GPU_TARGETS_STRING "")
