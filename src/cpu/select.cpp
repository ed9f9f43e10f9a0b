// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Selections whose length the run decides, each writing it as its last output (i64 [1])
// and leaving its bound's rows after the result zero; the cpu target cuts the outputs
// there (targets/cpu/segments.py, COUNTED_KERNELS):
//   Compress: the slices of data along `axis` (-1: data flattened) whose condition
//     (bool, 1-D; a shorter one selects among the first slices only, a longer one must
//     be false past the axis) is true;
//   NonZero: the coordinates [rank, count] of the non-zero elements in row-major order
//     (NaN counts as non-zero, -0.0 as zero).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/kernel.hpp"
#include "cpu/select_values.hpp"

namespace graphkiln {
namespace {

class CompressKernel : public Kernel {
 public:
  explicit CompressKernel(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs[0];
    const int64_t axis = spec.attrs.get_int("axis");
    const select_values::AxisSplit split(x, axis);
    outer_ = split.outer, n_ = split.n, inner_ = split.inner;
    length_ = spec.inputs[1].numel();
    conditions_ = std::min(n_, length_);
    capacity_ = axis < 0 ? spec.outputs[0].numel() : spec.outputs[0].dims[axis];
    row_bytes_ = static_cast<size_t>(inner_) * dtype_size(x.dtype);
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const auto* src = static_cast<const char*>(inputs[0]);
    const auto* condition = static_cast<const uint8_t*>(inputs[1]);
    char* y = static_cast<char*>(outputs[0]);
    int64_t kept = 0;
    for (int64_t k = 0; k < conditions_; ++k) kept += condition[k] != 0;
    for (int64_t k = conditions_; k < length_; ++k)  // as numpy's compress, the ref's
      if (condition[k]) throw std::out_of_range("Compress: a true condition past the axis");
    if (kept > capacity_)  // only a constant condition's exact slot can be too small
      throw std::length_error("Compress: more slices selected than the plan's bound");
    int64_t j = 0;
    for (int64_t k = 0; k < conditions_; ++k) {
      if (!condition[k]) continue;
      for (int64_t o = 0; o < outer_; ++o)
        std::memcpy(y + (o * capacity_ + j) * row_bytes_, src + (o * n_ + k) * row_bytes_,
                    row_bytes_);
      ++j;
    }
    for (int64_t o = 0; o < outer_; ++o)
      std::memset(y + (o * capacity_ + kept) * row_bytes_, 0,
                  static_cast<size_t>(capacity_ - kept) * row_bytes_);
    static_cast<int64_t*>(outputs[1])[0] = kept;
  }

 private:
  int64_t outer_ = 1, n_ = 1, inner_ = 1, length_ = 0, conditions_ = 0, capacity_ = 0;
  size_t row_bytes_ = 0;
};

std::unique_ptr<Kernel> make_compress(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 2)
    spec_error(spec, "takes data and condition; makes the selection and its count");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& condition = spec.inputs[1];
  const TensorInfo& y = spec.outputs[0];
  const int64_t axis = spec.attrs.get_int("axis");
  if (axis >= x.rank()) spec_error(spec, "axis out of range");
  if (condition.dtype != DType::boolean || condition.rank() != 1)
    spec_error(spec, "condition must be a 1-D bool tensor");
  if (y.dtype != x.dtype) spec_error(spec, "output must have data's dtype");
  if (axis < 0) {
    if (y.rank() != 1) spec_error(spec, "a flattened selection is 1-D");
  } else {
    if (y.rank() != x.rank()) spec_error(spec, "output must have data's rank");
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d != axis && y.dims[d] != x.dims[d])
        spec_error(spec, "output dims other than the axis must be data's");
  }
  if (spec.outputs[1].dtype != DType::i64 || spec.outputs[1].numel() != 1)
    spec_error(spec, "the count must be i64 [1]");
  if (!x.is_contiguous() || !y.is_contiguous()) spec_error(spec, "plain tensors only");
  return std::make_unique<CompressKernel>(spec);
}

class NonZeroKernel : public Kernel {
 public:
  explicit NonZeroKernel(const KernelSpec& spec)
      : dtype_(spec.inputs[0].dtype), dims_(spec.inputs[0].dims), numel_(spec.inputs[0].numel()),
        capacity_(spec.outputs[0].dims[1]) {}

  void run(const void* const* inputs, void* const* outputs) override {
    auto* y = static_cast<int64_t*>(outputs[0]);
    const int rank = static_cast<int>(dims_.size());
    std::vector<int64_t> coord(dims_.size(), 0);
    int64_t found = 0;
    for (int64_t i = 0; i < numel_; ++i) {
      if (select_values::nonzero(dtype_, inputs[0], i)) {
        for (int r = 0; r < rank; ++r) y[r * capacity_ + found] = coord[r];
        ++found;
      }
      for (int r = rank - 1; r >= 0; --r) {  // the next row-major coordinate
        if (++coord[r] < dims_[r]) break;
        coord[r] = 0;
      }
    }
    for (int r = 0; r < rank; ++r)
      std::fill(y + r * capacity_ + found, y + (r + 1) * capacity_, int64_t{0});
    static_cast<int64_t*>(outputs[1])[0] = found;
  }

 private:
  DType dtype_;
  std::vector<int64_t> dims_;
  int64_t numel_, capacity_;
};

std::unique_ptr<Kernel> make_nonzero(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 2)
    spec_error(spec, "takes X; makes the coordinates and their count");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  if (x.rank() < 1) spec_error(spec, "X must have rank >= 1");
  if (y.dtype != DType::i64 || y.rank() != 2 || y.dims[0] != x.rank() || y.dims[1] != x.numel())
    spec_error(spec, "output must be i64 [rank, the bound of X's elements]");
  if (spec.outputs[1].dtype != DType::i64 || spec.outputs[1].numel() != 1)
    spec_error(spec, "the count must be i64 [1]");
  if (!x.is_contiguous()) spec_error(spec, "plain tensors only");
  return std::make_unique<NonZeroKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Compress", make_compress);
GRAPHKILN_REGISTER_KERNEL("NonZero", make_nonzero);

}  // namespace graphkiln
