// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// OneHot: out[o, d, i] = (indices[o, i] wrapped == d) ? values[1] : values[0]; depth is a
// build-time constant (the output's dim), values are read at run time. Float indices are
// truncated toward zero (as ref does); NaN / infinite ones match no position.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

template <typename I>
class OneHotKernel : public Kernel {
 public:
  OneHotKernel(const KernelSpec& spec, int axis) {
    const auto& dims = spec.outputs[0].dims;
    outer_ = inner_ = 1;
    for (int i = 0; i < axis; ++i) outer_ *= dims[i];
    for (size_t i = axis + 1; i < dims.size(); ++i) inner_ *= dims[i];
    depth_ = dims[axis];
    es_ = dtype_size(spec.outputs[0].dtype);
  }
  void run(const void* const* inputs, void* const* outputs) override {
    const I* idx = static_cast<const I*>(inputs[0]);
    const auto* values = static_cast<const unsigned char*>(inputs[2]);
    auto* out = static_cast<unsigned char*>(outputs[0]);
    const int64_t outer = outer_, inner = inner_, depth = depth_, es = static_cast<int64_t>(es_);
    // fill with "off", then set the "on" positions
    for (int64_t k = 0; k < outer * depth * inner; ++k) std::memcpy(out + k * es, values, es);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const I v = idx[o * inner + i];
        if constexpr (std::is_floating_point_v<I>) {
          if (!(std::fabs(v) < static_cast<I>(depth) + 1)) continue;  // NaN, inf, far off
        }
        int64_t d = static_cast<int64_t>(v);
        if (d < 0) d += depth;
        if (d < 0 || d >= depth) continue;
        std::memcpy(out + ((o * depth + d) * inner + i) * es, values + es, es);
      }
  }

 private:
  int64_t outer_, inner_, depth_;
  size_t es_;
};

std::unique_ptr<Kernel> make_onehot(const KernelSpec& spec) {
  if (spec.inputs.size() != 3 || spec.outputs.size() != 1)
    spec_error(spec, "takes indices, depth, values");
  const TensorInfo& out = spec.outputs[0];
  int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0) axis += out.rank();
  if (axis < 0 || axis >= out.rank()) spec_error(spec, "axis out of range");
  if (spec.inputs[2].numel() < 2 || spec.inputs[2].dtype != out.dtype)
    spec_error(spec, "values must hold (off, on) of the output type");
  switch (spec.inputs[0].dtype) {
    case DType::i64: return std::make_unique<OneHotKernel<int64_t>>(spec, static_cast<int>(axis));
    case DType::i32: return std::make_unique<OneHotKernel<int32_t>>(spec, static_cast<int>(axis));
    case DType::f32: return std::make_unique<OneHotKernel<float>>(spec, static_cast<int>(axis));
    case DType::f64: return std::make_unique<OneHotKernel<double>>(spec, static_cast<int>(axis));
    default: spec_error(spec, "indices must be i32, i64, f32 or f64");
  }
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("OneHot", make_onehot);

}  // namespace graphkiln
