// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Tensors made from nothing: "Fill" (ConstantOfShape: one value's bytes everywhere) and
// "Range" (start + i * delta, computed in the output type like the ref target).
#include <omp.h>

#include <cstring>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelElems = 65536;

class FillKernel : public Kernel {
 public:
  FillKernel(int64_t bits, size_t es, int64_t n) : es_(es), n_(n) { std::memcpy(bytes_, &bits, 8); }
  void run(const void* const*, void* const* outputs) override {
    switch (es_) {
      case 1: fill<uint8_t>(outputs[0]); break;
      case 2: fill<uint16_t>(outputs[0]); break;
      case 4: fill<uint32_t>(outputs[0]); break;
      default: fill<uint64_t>(outputs[0]); break;
    }
  }

 private:
  template <typename T>
  void fill(void* dst_v) const {
    T v;
    std::memcpy(&v, bytes_, sizeof(T));
    T* dst = static_cast<T*>(dst_v);
    const int64_t n = n_;
#pragma omp parallel for schedule(static) if (n > kParallelElems)
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  }
  size_t es_;
  int64_t n_;
  unsigned char bytes_[8];
};

std::unique_ptr<Kernel> make_fill(const KernelSpec& spec) {
  if (spec.outputs.size() != 1) spec_error(spec, "one output");
  return std::make_unique<FillKernel>(spec.attrs.get_int("bits", 0),
                                      dtype_size(spec.outputs[0].dtype), spec.outputs[0].numel());
}

template <typename T, typename W>
class RangeKernel : public Kernel {
 public:
  explicit RangeKernel(int64_t n) : n_(n) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const W start = static_cast<W>(*static_cast<const T*>(inputs[0]));
    const W delta = static_cast<W>(*static_cast<const T*>(inputs[2]));
    T* out = static_cast<T*>(outputs[0]);
    for (int64_t i = 0; i < n_; ++i) {
      const W step = static_cast<W>(i) * delta;
      out[i] = static_cast<T>(start + step);
    }
  }

 private:
  int64_t n_;
};

std::unique_ptr<Kernel> make_range(const KernelSpec& spec) {
  if (spec.inputs.size() != 3 || spec.outputs.size() != 1) spec_error(spec, "start, limit, delta");
  const int64_t n = spec.outputs[0].numel();
  switch (spec.outputs[0].dtype) {
    case DType::f32: return std::make_unique<RangeKernel<float, float>>(n);
    case DType::f64: return std::make_unique<RangeKernel<double, double>>(n);
    case DType::i64: return std::make_unique<RangeKernel<int64_t, int64_t>>(n);
    case DType::i32: return std::make_unique<RangeKernel<int32_t, int64_t>>(n);
    case DType::i16: return std::make_unique<RangeKernel<int16_t, int64_t>>(n);
    case DType::i8: return std::make_unique<RangeKernel<int8_t, int64_t>>(n);
    default: spec_error(spec, "dtype not supported");
  }
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Fill", make_fill);
GRAPHKILN_REGISTER_KERNEL("Range", make_range);

}  // namespace graphkiln
