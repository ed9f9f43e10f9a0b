// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Copy between two strided views of memory (strides in elements, may be negative or 0 on the
// source side): layout reorders, transposes, slices, broadcasts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace graphkiln {

// A copy planned once (dims simplified, loop kind chosen) and run many times.
class StridedCopy {
 public:
  StridedCopy() = default;
  StridedCopy(size_t elem_size, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides);
  void run(const void* src, void* dst) const;
  // copies of more elements than this run in parallel (OpenMP)
  static constexpr int64_t kParallelElems = 32768;

  // the simplified copy (size-1 dims dropped, dims contiguous in both views merged;
  // outermost first) and whether it runs as a tiled transpose
  bool empty() const { return empty_; }
  size_t elem_size() const { return elem_; }
  const std::vector<int64_t>& dims() const { return size_; }
  const std::vector<int64_t>& src_strides() const { return src_; }
  const std::vector<int64_t>& dst_strides() const { return dst_; }
  bool tiled() const { return tile_ >= 0; }

  // the lowest and highest element offsets touched, relative to the base pointers
  static void extent(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                     int64_t* lo, int64_t* hi);

 private:
  template <typename T>
  void run_typed(const T* src, T* dst) const;

  size_t elem_ = 4;
  bool empty_ = true;
  std::vector<int64_t> size_, src_, dst_;  // simplified dims, outermost first
  int tile_ = -1;                          // dim read contiguously for a tiled transpose
  std::vector<int> batch_;                 // the dims other than tile_ and the innermost
};

// dims, src_strides and dst_strides have the same length; elem_size is 1, 2, 4 or 8 bytes.
void strided_copy(const void* src, void* dst, size_t elem_size, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides);

}  // namespace graphkiln
