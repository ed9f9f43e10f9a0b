// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Copy between two layouts of the same logical tensor (strides in elements).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace graphkiln {

// dims, src_strides and dst_strides have the same length; elem_size is 1, 2, 4 or 8 bytes.
void strided_copy(const void* src, void* dst, size_t elem_size, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& src_strides,
                  const std::vector<int64_t>& dst_strides);

}  // namespace graphkiln
