// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Element types and tensor descriptions shared by the executor and the kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace graphkiln {

// The IR's short dtype names (f32, i64, bool, ...); only those the CPU kernels handle.
enum class DType : int { f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64, boolean };

DType dtype_from_name(const std::string& name);  // throws std::invalid_argument
const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

// One tensor argument of a kernel: logical dims (the IR's shape), strides in elements
// (a permutation of the row-major strides for channels-last data) and, for a constant,
// its data at build time (kernels may pack it then and ignore the run-time pointer).
struct TensorInfo {
  DType dtype = DType::f32;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  const void* constant = nullptr;

  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  int rank() const { return static_cast<int>(dims.size()); }
  bool is_contiguous() const;      // row-major strides (size-1 dims ignored)
  bool is_channels_last() const;   // rank >= 3, strides of N, spatial..., C order
};

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);
// Strides of N, spatial..., C order for logical dims (N, C, spatial...); rank >= 2.
std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& dims);

}  // namespace graphkiln
