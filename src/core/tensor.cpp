// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "core/tensor.hpp"

#include <stdexcept>

namespace graphkiln {

namespace {
struct DTypeRow {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeRow kDTypes[] = {
    {DType::f32, "f32", 4},      {DType::f64, "f64", 8}, {DType::f16, "f16", 2},
    {DType::bf16, "bf16", 2},    {DType::i8, "i8", 1},   {DType::i16, "i16", 2},
    {DType::i32, "i32", 4},      {DType::i64, "i64", 8}, {DType::u8, "u8", 1},
    {DType::u16, "u16", 2},      {DType::u32, "u32", 4}, {DType::u64, "u64", 8},
    {DType::boolean, "bool", 1},
};
}  // namespace

DType dtype_from_name(const std::string& name) {
  for (const auto& row : kDTypes)
    if (name == row.name) return row.dtype;
  throw std::invalid_argument("the cpu target has no element type '" + name +
                              "' (accepted: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool)");
}

const char* dtype_name(DType dtype) { return kDTypes[static_cast<int>(dtype)].name; }
size_t dtype_size(DType dtype) { return kDTypes[static_cast<int>(dtype)].size; }

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t step = dims[1];
  strides[1] = 1;
  for (size_t i = dims.size(); i-- > 2;) {
    strides[i] = step;
    step *= dims[i];
  }
  strides[0] = step;
  return strides;
}

bool TensorInfo::is_contiguous() const {
  const auto expected = row_major_strides(dims);
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && strides[i] != expected[i]) return false;
  return true;
}

bool TensorInfo::is_channels_last() const {
  if (dims.size() < 3) return false;
  // order: N, spatial dims (2..rank-1), then C
  std::vector<int> order{0};
  for (int i = 2; i < rank(); ++i) order.push_back(i);
  order.push_back(1);
  int64_t expected = 1;
  for (int k = rank() - 1; k >= 0; --k) {
    const int axis = order[k];
    if (dims[axis] != 1 && strides[axis] != expected) return false;
    expected *= dims[axis];
  }
  return true;
}

}  // namespace graphkiln
