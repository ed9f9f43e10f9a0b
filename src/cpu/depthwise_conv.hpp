// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The direct depthwise convolution conv.cpp uses where oneDNN would fall back to gemm.
#pragma once

#include <memory>

#include "core/kernel.hpp"

namespace graphkiln {

// A kernel for a "Conv" step that is depthwise (group = channels, one filter each), 1-D or
// 2-D, without post-ops, on plain or channels-last f32 data; nullptr for any other step.
std::unique_ptr<Kernel> make_depthwise_conv(const KernelSpec& spec);

}  // namespace graphkiln
