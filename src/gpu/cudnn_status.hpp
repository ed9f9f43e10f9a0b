// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Whether Conv steps can use cuDNN in this process (host code may include this header).
#pragma once

#include <string>

namespace graphkiln {
namespace gpu {

// "cudnn" when Conv steps can use cuDNN here, else "off: <why>" (conv_cudnn.hip)
std::string cudnn_status();

}  // namespace gpu
}  // namespace graphkiln
