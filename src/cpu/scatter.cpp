// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// ScatterND and ScatterElements: the output is a copy of data with updates written (or
// combined: add / mul / max / min) at the indexed places, in index order like the ref
// target (so duplicate indices with reduction "none" keep the last update). Serial: the
// order matters. Indices i32/i64, negative ones count from the end; one out of range
// throws (no parallel region is open).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

enum class Reduce { none, add, mul, max, min };

Reduce parse_reduction(const KernelSpec& spec) {
  const std::string r = spec.attrs.get_str("reduction", "none");
  if (r == "none") return Reduce::none;
  if (r == "add") return Reduce::add;
  if (r == "mul") return Reduce::mul;
  if (r == "max") return Reduce::max;
  if (r == "min") return Reduce::min;
  spec_error(spec, "unknown reduction '" + r + "'");
}

template <typename T>
inline void combine(T* d, const T* u, int64_t n, Reduce r) {
  switch (r) {
    case Reduce::none: std::memcpy(d, u, sizeof(T) * n); break;
    case Reduce::add:
      for (int64_t i = 0; i < n; ++i) d[i] = d[i] + u[i];
      break;
    case Reduce::mul:
      for (int64_t i = 0; i < n; ++i) d[i] = d[i] * u[i];
      break;
    case Reduce::max:
      for (int64_t i = 0; i < n; ++i) d[i] = std::max(d[i], u[i]);
      break;
    case Reduce::min:
      for (int64_t i = 0; i < n; ++i) d[i] = std::min(d[i], u[i]);
      break;
  }
}

template <typename I>
inline int64_t wrap(I raw, int64_t size, const std::string& name) {
  int64_t k = static_cast<int64_t>(raw);
  if (k < 0) k += size;
  if (k < 0 || k >= size)
    throw std::out_of_range(name + ": index " + std::to_string(raw) +
                            " out of range for an axis of size " + std::to_string(size));
  return k;
}

// ---- ScatterND ----------------------------------------------------------------------------
template <typename T, typename I>
class ScatterNDKernel : public Kernel {
 public:
  ScatterNDKernel(const KernelSpec& spec, Reduce r)
      : r_(r), name_("ScatterND '" + spec.name + "'") {
    const TensorInfo& data = spec.inputs[0];
    const TensorInfo& ind = spec.inputs[1];
    total_ = data.numel();
    depth_ = ind.dims.back();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < ind.dims.size(); ++i) rows *= ind.dims[i];
    count_ = rows;
    const auto strides = row_major_strides(data.dims);
    for (int64_t j = 0; j < depth_; ++j) {
      sizes_.push_back(data.dims[j]);
      strides_.push_back(strides[j]);
    }
    slice_ = 1;
    for (size_t i = depth_; i < data.dims.size(); ++i) slice_ *= data.dims[i];
  }
  void run(const void* const* inputs, void* const* outputs) override {
    const T* data = static_cast<const T*>(inputs[0]);
    const I* ind = static_cast<const I*>(inputs[1]);
    const T* upd = static_cast<const T*>(inputs[2]);
    T* out = static_cast<T*>(outputs[0]);
    if (out != data) std::memcpy(out, data, sizeof(T) * total_);
    for (int64_t n = 0; n < count_; ++n) {
      int64_t offset = 0;
      for (int64_t j = 0; j < depth_; ++j)
        offset += wrap(ind[n * depth_ + j], sizes_[j], name_) * strides_[j];
      combine(out + offset, upd + n * slice_, slice_, r_);
    }
  }

 private:
  Reduce r_;
  std::string name_;
  int64_t total_, depth_, count_, slice_;
  std::vector<int64_t> sizes_, strides_;
};

// ---- ScatterElements ----------------------------------------------------------------------
template <typename T, typename I>
class ScatterElementsKernel : public Kernel {
 public:
  ScatterElementsKernel(const KernelSpec& spec, Reduce r, int axis)
      : r_(r), name_("ScatterElements '" + spec.name + "'") {
    const TensorInfo& data = spec.inputs[0];
    const TensorInfo& ind = spec.inputs[1];
    total_ = data.numel();
    const auto strides = row_major_strides(data.dims);
    size_ = data.dims[axis];
    axis_stride_ = strides[axis];
    n_ = ind.dims[axis];
    outer_ = table(ind.dims, strides, 0, axis);
    inner_ = table(ind.dims, strides, axis + 1, ind.dims.size());
  }
  void run(const void* const* inputs, void* const* outputs) override {
    const T* data = static_cast<const T*>(inputs[0]);
    const I* ind = static_cast<const I*>(inputs[1]);
    const T* upd = static_cast<const T*>(inputs[2]);
    T* out = static_cast<T*>(outputs[0]);
    if (out != data) std::memcpy(out, data, sizeof(T) * total_);
    const int64_t inner = static_cast<int64_t>(inner_.size());
    int64_t e = 0;
    for (size_t o = 0; o < outer_.size(); ++o)
      for (int64_t j = 0; j < n_; ++j)
        for (int64_t i = 0; i < inner; ++i, ++e) {
          const int64_t k = wrap(ind[e], size_, name_);
          combine(out + outer_[o] + k * axis_stride_ + inner_[i], upd + e, 1, r_);
        }
  }

 private:
  static std::vector<int64_t> table(const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& strides, size_t begin, size_t end) {
    std::vector<int64_t> out{0};
    for (size_t i = begin; i < end; ++i) {
      std::vector<int64_t> next;
      for (int64_t base : out)
        for (int64_t k = 0; k < dims[i]; ++k) next.push_back(base + k * strides[i]);
      out.swap(next);
    }
    return out;
  }
  Reduce r_;
  std::string name_;
  int64_t total_, size_, axis_stride_, n_;
  std::vector<int64_t> outer_, inner_;
};

template <template <typename, typename> class K, typename... Args>
std::unique_ptr<Kernel> dispatch(const KernelSpec& spec, Reduce r, Args... args) {
  const bool i64 = spec.inputs[1].dtype == DType::i64;
  if (spec.inputs[1].dtype != DType::i64 && spec.inputs[1].dtype != DType::i32)
    spec_error(spec, "indices must be i32 or i64");
  const DType t = spec.inputs[0].dtype;
#define GK_SCATTER_TYPE(TYPE) \
  return i64 ? std::unique_ptr<Kernel>(new K<TYPE, int64_t>(spec, r, args...)) \
             : std::unique_ptr<Kernel>(new K<TYPE, int32_t>(spec, r, args...))
  switch (t) {
    case DType::f32: GK_SCATTER_TYPE(float);
    case DType::f64: GK_SCATTER_TYPE(double);
    case DType::i32: GK_SCATTER_TYPE(int32_t);
    case DType::i64: GK_SCATTER_TYPE(int64_t);
    default: break;
  }
  if (r != Reduce::none) spec_error(spec, "reductions need f32, f64, i32 or i64 data");
  switch (dtype_size(t)) {
    case 1: GK_SCATTER_TYPE(uint8_t);
    case 2: GK_SCATTER_TYPE(uint16_t);
    case 4: GK_SCATTER_TYPE(uint32_t);
    default: GK_SCATTER_TYPE(uint64_t);
  }
#undef GK_SCATTER_TYPE
}

void check_plain(const KernelSpec& spec) {
  if (spec.inputs.size() != 3 || spec.outputs.size() != 1)
    spec_error(spec, "takes data, indices, updates");
  for (const TensorInfo& t : spec.inputs)
    if (!t.is_contiguous()) spec_error(spec, "plain tensors only");
  if (spec.inputs[2].dtype != spec.inputs[0].dtype) spec_error(spec, "updates differ in dtype");
}

std::unique_ptr<Kernel> make_scatter_nd(const KernelSpec& spec) {
  check_plain(spec);
  const TensorInfo& data = spec.inputs[0];
  const TensorInfo& ind = spec.inputs[1];
  if (ind.rank() < 1 || ind.dims.back() > data.rank())
    spec_error(spec, "indices' last dim exceeds the data's rank");
  int64_t rows = 1, slice = 1;
  for (int i = 0; i + 1 < ind.rank(); ++i) rows *= ind.dims[i];
  for (int i = static_cast<int>(ind.dims.back()); i < data.rank(); ++i) slice *= data.dims[i];
  if (spec.inputs[2].numel() != rows * slice) spec_error(spec, "updates have the wrong size");
  return dispatch<ScatterNDKernel>(spec, parse_reduction(spec));
}

std::unique_ptr<Kernel> make_scatter_elements(const KernelSpec& spec) {
  check_plain(spec);
  const TensorInfo& data = spec.inputs[0];
  const TensorInfo& ind = spec.inputs[1];
  int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0) axis += data.rank();
  if (axis < 0 || axis >= data.rank() || ind.rank() != data.rank())
    spec_error(spec, "bad axis or index rank");
  if (spec.inputs[2].dims != ind.dims) spec_error(spec, "updates and indices differ in shape");
  for (int i = 0; i < data.rank(); ++i)
    if (i != axis && ind.dims[i] > data.dims[i]) spec_error(spec, "indices larger than data");
  return dispatch<ScatterElementsKernel>(spec, parse_reduction(spec), static_cast<int>(axis));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("ScatterND", make_scatter_nd);
GRAPHKILN_REGISTER_KERNEL("ScatterElements", make_scatter_elements);

}  // namespace graphkiln
