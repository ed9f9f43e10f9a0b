// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Conv" steps on MIOpen (conv_miopen.hip), for the Conv step factory in conv_cudnn.hip.
// Host code may include this header (miopen_status only).
#pragma once

#include <memory>
#include <string>

namespace graphkiln {
namespace gpu {

// "miopen" when Conv steps can use MIOpen here, else "off: <why>"
std::string miopen_status();

}  // namespace gpu
}  // namespace graphkiln

#if defined(__HIP__)
#include "gpu/conv_epilogue.hpp"
#include "gpu/kernel.hpp"

namespace graphkiln {
namespace gpu {

// The step on MIOpen, or null with *why set (MIOpen missing or disabled, or refusing the
// step's shapes, layouts or types).
std::unique_ptr<Kernel> try_make_miopen_conv(const KernelSpec& spec, const conv_step::Epilogue& e,
                                             std::string* why);

}  // namespace gpu
}  // namespace graphkiln
#endif  // __HIP__
