// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What the "Conv" step's library paths share (conv_cudnn.hip on NVIDIA, conv_miopen.hip on
// AMD): the step's epilogue y = act(y + bias + z) and its kernel, the layouts a step may
// use, the tuning variants' numbering and build-time scratch buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/kernel.hpp"
#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {
namespace conv_step {

struct Epilogue {
  bool relu = false;
  bool has_z = false;
};

enum class Layout { kNchw, kNhwc, kOther };

// contiguous NCHW, packed NHWC (strides [H*W*C, 1, W*C, C]) or neither
Layout layout_of(const TensorInfo& t);

// The step's activation (relu or none) and residual (input 3: y's shape, type and layout);
// throws naming the step otherwise.
Epilogue read_epilogue(const KernelSpec& spec);

// y = act(y + bias[channel] + z) in float with one rounding, on `stream` (bias, z may be
// null; plane = 1 for channels-last data, H*W for NCHW).
void launch_epilogue(DType dtype, void* y, const void* bias, const void* z, int64_t channels,
                     int64_t plane, int64_t total, bool relu, hipStream_t stream);

// Workspace a library algorithm may ask for at most.
constexpr size_t kWorkspaceCap = size_t{256} << 20;
// Tuning variants (attribute "variant", graphkiln.tuning.gpu): 1..kVariantAlgos the
// library's k-th algorithm in its fused form, kVariantAlgos+1..2*kVariantAlgos in its plain
// form (a library without a fused call runs the k-th algorithm either way), kConvHipVariant
// conv.hip's kernel.
constexpr int kVariantAlgos = 4;
constexpr int kConvHipVariant = 2 * kVariantAlgos + 1;

inline bool fits_int(int64_t v) { return v >= 0 && v < (int64_t{1} << 31); }

// Device scratch (zeroed) owned for the duration of a build-time trial; p is null when the
// allocation failed.
struct ScratchBuffer {
  void* p = nullptr;
  explicit ScratchBuffer(size_t bytes) {
    if (bytes && hipMalloc(&p, bytes) == hipSuccess) (void)hipMemsetAsync(p, 0, bytes, nullptr);
  }
  ~ScratchBuffer() {
    if (p) (void)hipFree(p);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
};

}  // namespace conv_step
}  // namespace gpu
}  // namespace graphkiln
