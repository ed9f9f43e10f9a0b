// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Gather and GatherElements (indices i32 or i64; negative indices count from the end; an
// index out of range throws from run(), before or after the parallel loops, never inside).
#include <omp.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelElems = 32768;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

template <typename I>
void wrap_indices(const I* raw, int64_t n, int64_t size, int64_t* out, const std::string& name) {
  for (int64_t j = 0; j < n; ++j) {
    int64_t k = static_cast<int64_t>(raw[j]);
    if (k < 0) k += size;
    if (k < 0 || k >= size)
      throw std::out_of_range("Gather '" + name + "': index " + std::to_string(raw[j]) +
                              " out of range for axis of size " + std::to_string(size));
    out[j] = k;
  }
}

// ---- Gather: out[o, j, i] = data[o, indices[j], i] ------------------------------------
class GatherKernel : public Kernel {
 public:
  GatherKernel(const KernelSpec& spec, int axis) : name_(spec.name) {
    const TensorInfo& data = spec.inputs[0];
    es_ = dtype_size(data.dtype);
    outer_ = product(data.dims, 0, axis);
    size_ = data.dims[axis];
    inner_ = product(data.dims, axis + 1, data.dims.size());
    nidx_ = spec.inputs[1].numel();
    idx64_ = spec.inputs[1].dtype == DType::i64;
    idx_.resize(static_cast<size_t>(nidx_));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    if (idx64_)
      wrap_indices(static_cast<const int64_t*>(inputs[1]), nidx_, size_, idx_.data(), name_);
    else wrap_indices(static_cast<const int32_t*>(inputs[1]), nidx_, size_, idx_.data(), name_);
    switch (es_) {
      case 1: copy<uint8_t>(inputs[0], outputs[0]); break;
      case 2: copy<uint16_t>(inputs[0], outputs[0]); break;
      case 4: copy<uint32_t>(inputs[0], outputs[0]); break;
      default: copy<uint64_t>(inputs[0], outputs[0]); break;
    }
  }

 private:
  template <typename T>
  void copy(const void* src_v, void* dst_v) const {
    const T* src = static_cast<const T*>(src_v);
    T* dst = static_cast<T*>(dst_v);
    const int64_t outer = outer_, nidx = nidx_, inner = inner_, size = size_;
    const int64_t* idx = idx_.data();
    const int64_t total = outer * nidx * inner;
    if (inner == 1) {
#pragma omp parallel for schedule(static) if (total > kParallelElems)
      for (int64_t o = 0; o < outer; ++o) {
        const T* s = src + o * size;
        T* d = dst + o * nidx;
        for (int64_t j = 0; j < nidx; ++j) d[j] = s[idx[j]];
      }
      return;
    }
#pragma omp parallel for schedule(static) if (total > kParallelElems)
    for (int64_t w = 0; w < outer * nidx; ++w) {
      const int64_t o = w / nidx, j = w % nidx;
      std::memcpy(dst + w * inner, src + (o * size + idx[j]) * inner, sizeof(T) * inner);
    }
  }

  std::string name_;
  size_t es_;
  int64_t outer_, size_, inner_, nidx_;
  bool idx64_;
  std::vector<int64_t> idx_;
};

bool index_dtype(DType t) { return t == DType::i64 || t == DType::i32; }

std::unique_ptr<Kernel> make_gather(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1)
    spec_error(spec, "takes data and indices");
  const TensorInfo& data = spec.inputs[0];
  if (!index_dtype(spec.inputs[1].dtype)) spec_error(spec, "indices must be i32 or i64");
  if (!data.is_contiguous() || !spec.inputs[1].is_contiguous() || !spec.outputs[0].is_contiguous())
    spec_error(spec, "plain tensors only");
  int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0) axis += data.rank();
  if (axis < 0 || axis >= data.rank()) spec_error(spec, "axis out of range");
  if (data.dims[axis] == 0 && spec.inputs[1].numel() > 0)
    spec_error(spec, "gathering from an empty axis");
  return std::make_unique<GatherKernel>(spec, static_cast<int>(axis));
}

// ---- GatherElements: out[..., j, ...] = data[..., indices[..., j, ...], ...] ------------
// outer / inner: the index tensor's dims before / after the axis; their data offsets are
// tabulated at build time (the data may be larger than the indices on those dims).
class GatherElementsKernel : public Kernel {
 public:
  GatherElementsKernel(const KernelSpec& spec, int axis) : name_(spec.name) {
    const TensorInfo& data = spec.inputs[0];
    const TensorInfo& ind = spec.inputs[1];
    es_ = dtype_size(data.dtype);
    idx64_ = ind.dtype == DType::i64;
    const auto strides = row_major_strides(data.dims);
    size_ = data.dims[axis];
    axis_stride_ = strides[axis];
    n_ = ind.dims[axis];
    outer_base_ = offsets(ind.dims, strides, 0, axis);
    inner_base_ = offsets(ind.dims, strides, axis + 1, ind.dims.size());
  }

  void run(const void* const* inputs, void* const* outputs) override {
    bool bad;
    if (idx64_) bad = typed_idx<int64_t>(inputs, outputs);
    else bad = typed_idx<int32_t>(inputs, outputs);
    if (bad)
      throw std::out_of_range("GatherElements '" + name_ +
                              "': an index is out of range for "
                              "an axis of size " +
                              std::to_string(size_));
  }

 private:
  static std::vector<int64_t> offsets(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& strides, size_t begin,
                                      size_t end) {
    std::vector<int64_t> out{0};
    for (size_t i = begin; i < end; ++i) {
      std::vector<int64_t> next;
      next.reserve(out.size() * dims[i]);
      for (int64_t base : out)
        for (int64_t k = 0; k < dims[i]; ++k) next.push_back(base + k * strides[i]);
      out.swap(next);
    }
    return out;
  }

  template <typename I>
  bool typed_idx(const void* const* inputs, void* const* outputs) const {
    switch (es_) {
      case 1: return copy<I, uint8_t>(inputs, outputs);
      case 2: return copy<I, uint16_t>(inputs, outputs);
      case 4: return copy<I, uint32_t>(inputs, outputs);
      default: return copy<I, uint64_t>(inputs, outputs);
    }
  }

  template <typename I, typename T>
  bool copy(const void* const* inputs, void* const* outputs) const {
    const T* src = static_cast<const T*>(inputs[0]);
    const I* ind = static_cast<const I*>(inputs[1]);
    T* dst = static_cast<T*>(outputs[0]);
    const int64_t outer = static_cast<int64_t>(outer_base_.size());
    const int64_t inner = static_cast<int64_t>(inner_base_.size());
    const int64_t n = n_, size = size_, as = axis_stride_;
    const int64_t* ob = outer_base_.data();
    const int64_t* ib = inner_base_.data();
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (outer * n * inner > kParallelElems)
    for (int64_t w = 0; w < outer * n; ++w) {
      const int64_t o = w / n;
      const I* row = ind + w * inner;
      T* d = dst + w * inner;
      const T* s = src + ob[o];
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = static_cast<int64_t>(row[i]);
        k += k < 0 ? size : 0;
        if (k < 0 || k >= size) {
          bad = 1;
          k = 0;
        }
        d[i] = s[k * as + ib[i]];
      }
    }
    return bad != 0;
  }

  std::string name_;
  size_t es_;
  bool idx64_;
  int64_t size_, axis_stride_, n_;
  std::vector<int64_t> outer_base_, inner_base_;
};

std::unique_ptr<Kernel> make_gather_elements(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1)
    spec_error(spec, "takes data and indices");
  const TensorInfo& data = spec.inputs[0];
  const TensorInfo& ind = spec.inputs[1];
  if (!index_dtype(ind.dtype)) spec_error(spec, "indices must be i32 or i64");
  if (!data.is_contiguous() || !ind.is_contiguous() || !spec.outputs[0].is_contiguous())
    spec_error(spec, "plain tensors only");
  if (ind.rank() != data.rank()) spec_error(spec, "data and indices differ in rank");
  int64_t axis = spec.attrs.get_int("axis");
  if (axis < 0) axis += data.rank();
  if (axis < 0 || axis >= data.rank()) spec_error(spec, "axis out of range");
  for (int i = 0; i < data.rank(); ++i)
    if (i != axis && ind.dims[i] > data.dims[i])
      spec_error(spec, "indices larger than data on a dim other than the axis");
  if (data.dims[axis] == 0 && ind.numel() > 0) spec_error(spec, "gathering from an empty axis");
  return std::make_unique<GatherElementsKernel>(spec, static_cast<int>(axis));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Gather", make_gather);
GRAPHKILN_REGISTER_KERNEL("GatherElements", make_gather_elements);

}  // namespace graphkiln
