// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "MaxUnpool": Y of zeros with each X value written at the flat position its index I names,
// of plain data of any dtype (moved by its width); I is i64 or i32, read at run time.
// The indices count positions in the pooled input, of dims `source_dims` (from the pooling
// attributes, computed in Python); where Y's dims (an output_shape) differ, each value keeps
// its coordinates and those outside Y are dropped. An index outside source_dims throws.
// Later values win over earlier ones at the same position.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class MaxUnpoolKernel : public Kernel {
 public:
  explicit MaxUnpoolKernel(const KernelSpec& spec) : name_(spec.name) {
    source_ = spec.attrs.get_ints("source_dims");
    out_ = spec.outputs[0].dims;
    if (source_.size() != out_.size()) spec_error(spec, "source_dims must have Y's rank");
    source_numel_ = 1;
    for (int64_t d : source_) source_numel_ *= d;
    same_ = source_ == out_;
    count_ = spec.inputs[0].numel();
    if (spec.inputs[1].numel() != count_) spec_error(spec, "X and I must have one size");
    width_ = dtype_size(spec.inputs[0].dtype);
    out_bytes_ = spec.outputs[0].nbytes();
    idx64_ = spec.inputs[1].dtype == DType::i64;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const auto* src = static_cast<const unsigned char*>(inputs[0]);
    auto* dst = static_cast<unsigned char*>(outputs[0]);
    std::memset(dst, 0, out_bytes_);
    for (int64_t j = 0; j < count_; ++j) {
      const int64_t index = idx64_ ? static_cast<const int64_t*>(inputs[1])[j]
                                   : static_cast<const int32_t*>(inputs[1])[j];
      if (index < 0 || index >= source_numel_)
        throw std::out_of_range("MaxUnpool '" + name_ + "': index " + std::to_string(index) +
                                " outside the pooled input of " + std::to_string(source_numel_) +
                                " elements");
      const int64_t at = same_ ? index : moved(index);
      if (at >= 0) std::memcpy(dst + at * width_, src + j * width_, width_);
    }
  }

 private:
  // The flat position in Y of source position `index`, or -1 when outside Y.
  int64_t moved(int64_t index) const {
    int64_t at = 0, scale = 1;
    for (size_t i = source_.size(); i-- > 0;) {
      const int64_t coord = index % source_[i];
      index /= source_[i];
      if (coord >= out_[i]) return -1;
      at += coord * scale;
      scale *= out_[i];
    }
    return at;
  }

  std::string name_;
  std::vector<int64_t> source_, out_;
  int64_t source_numel_ = 0, count_ = 0, width_ = 0;
  size_t out_bytes_ = 0;
  bool same_ = true, idx64_ = true;
};

std::unique_ptr<Kernel> make_max_unpool(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1) spec_error(spec, "takes X, I -> Y");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& ind = spec.inputs[1];
  if (ind.dtype != DType::i64 && ind.dtype != DType::i32) spec_error(spec, "I must be i64 or i32");
  if (spec.outputs[0].dtype != x.dtype) spec_error(spec, "Y must have X's dtype");
  if (!x.is_contiguous() || !ind.is_contiguous() || !spec.outputs[0].is_contiguous())
    spec_error(spec, "plain tensors only");
  return std::make_unique<MaxUnpoolKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("MaxUnpool", make_max_unpool);

}  // namespace graphkiln
