// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims,
// zeros elsewhere; k from the optional i64 input (read at run time) else 0.
#include <omp.h>

#include <cstring>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class TriluKernel : public Kernel {
 public:
  TriluKernel(const KernelSpec& spec)
      : upper_(spec.attrs.get_int("upper", 1) != 0), has_k_(spec.has_input(1)) {
    const TensorInfo& x = spec.inputs[0];
    es_ = dtype_size(x.dtype);
    rows_ = x.dims[x.rank() - 2];
    cols_ = x.dims[x.rank() - 1];
    batch_ = rows_ * cols_ == 0 ? 0 : x.numel() / (rows_ * cols_);
  }
  void run(const void* const* inputs, void* const* outputs) override {
    const int64_t k = has_k_ ? *static_cast<const int64_t*>(inputs[1]) : 0;
    const auto* src = static_cast<const unsigned char*>(inputs[0]);
    auto* dst = static_cast<unsigned char*>(outputs[0]);
    const int64_t rows = rows_, cols = cols_, es = static_cast<int64_t>(es_);
#pragma omp parallel for schedule(static) if (batch_ * rows * cols > 32768)
    for (int64_t w = 0; w < batch_ * rows; ++w) {
      const int64_t i = w % rows;
      // kept columns: [lo, hi)
      int64_t lo, hi;
      if (upper_) lo = std::min(std::max(i + k, int64_t{0}), cols), hi = cols;
      else lo = 0, hi = std::min(std::max(i + k + 1, int64_t{0}), cols);
      unsigned char* d = dst + w * cols * es;
      const unsigned char* s = src + w * cols * es;
      std::memset(d, 0, lo * es);
      if (hi > lo) std::memcpy(d + lo * es, s + lo * es, (hi - lo) * es);
      if (hi < cols) std::memset(d + std::max(hi, lo) * es, 0, (cols - std::max(hi, lo)) * es);
    }
  }

 private:
  bool upper_, has_k_;
  size_t es_;
  int64_t rows_, cols_, batch_;
};

std::unique_ptr<Kernel> make_trilu(const KernelSpec& spec) {
  if (spec.inputs.empty() || spec.outputs.size() != 1) spec_error(spec, "takes input [, k]");
  const TensorInfo& x = spec.inputs[0];
  if (x.rank() < 2) spec_error(spec, "rank must be >= 2");
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain only");
  if (spec.has_input(1) && spec.inputs[1].dtype != DType::i64) spec_error(spec, "k must be i64");
  return std::make_unique<TriluKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Trilu", make_trilu);

}  // namespace graphkiln
