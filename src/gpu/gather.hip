// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Gather along one axis: data [outer, axis_dim, inner], indices (i32 / i64, negative counts
// from the end) -> out [outer, num_indices, inner]. An index out of range gives zeros.
#include "gpu/common.hpp"

#include <cstdint>

#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

template <typename T, typename I>
__global__ void gather_axis(const T* data, const I* indices, T* out, int64_t axis_dim,
                            int64_t num_indices, int64_t inner, int64_t n) {
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t inner_i = o % inner;
    const int64_t j = (o / inner) % num_indices;
    const int64_t outer_i = o / (inner * num_indices);
    int64_t idx = static_cast<int64_t>(indices[j]);
    if (idx < 0) idx += axis_dim;
    out[o] = (idx >= 0 && idx < axis_dim) ? data[(outer_i * axis_dim + idx) * inner + inner_i]
                                          : T(0);
  }
}

// GatherElements: out[i] = data[i with its `axis` coordinate replaced by indices[i]]; out
// and indices share a shape (at most 8 dims), data is contiguous.
template <typename T, typename I>
__global__ void gather_elements(const T* data, const I* indices, T* out, Strides out_dims,
                                Strides data_strides, int axis, int64_t axis_dim, int64_t n) {
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = o, offset = 0;
    bool ok = true;
    for (int d = out_dims.rank - 1; d >= 0; --d) {
      int64_t coord = rest % out_dims.dims[d];
      rest /= out_dims.dims[d];
      if (d == axis) {
        coord = static_cast<int64_t>(indices[o]);
        if (coord < 0) coord += axis_dim;
        ok = coord >= 0 && coord < axis_dim;
      }
      offset += coord * data_strides.strides[d];
    }
    out[o] = ok ? data[offset] : T(0);
  }
}

class GatherElements : public Kernel {
 public:
  explicit GatherElements(const KernelSpec& spec) {
    const TensorInfo& data = spec.inputs.at(0);
    const TensorInfo& indices = spec.inputs.at(1);
    if (!data.is_contiguous() || !indices.is_contiguous() || data.rank() > kMaxRank)
      spec_error(spec, "needs contiguous data and indices of at most 8 dims");
    if (indices.dtype != DType::i64 && indices.dtype != DType::i32)
      spec_error(spec, "indices must be int32 or int64");
    axis_ = static_cast<int>(spec.attrs.get_int("axis"));
    dims_.rank = strides_.rank = data.rank();
    for (int d = 0; d < data.rank(); ++d) {
      dims_.dims[d] = indices.dims[d];
      strides_.strides[d] = data.strides[d];
    }
    axis_dim_ = data.dims[axis_];
    n_ = indices.numel();
    elem_ = dtype_size(data.dtype);
    wide_ = indices.dtype == DType::i64;
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    switch (elem_) {
      case 1: launch<uint8_t>(inputs, outputs, ctx); break;
      case 2: launch<uint16_t>(inputs, outputs, ctx); break;
      case 4: launch<uint32_t>(inputs, outputs, ctx); break;
      default: launch<uint64_t>(inputs, outputs, ctx); break;
    }
    check_launch("gather_elements");
  }

 private:
  template <typename T>
  void launch(const void* const* inputs, void* const* outputs, Context& ctx) const {
    const T* data = static_cast<const T*>(inputs[0]);
    T* out = static_cast<T*>(outputs[0]);
    const unsigned blocks = blocks_for(n_, 256);
    if (wide_)
      gather_elements<T, int64_t><<<blocks, 256, 0, ctx.stream>>>(
          data, static_cast<const int64_t*>(inputs[1]), out, dims_, strides_, axis_, axis_dim_, n_);
    else
      gather_elements<T, int32_t><<<blocks, 256, 0, ctx.stream>>>(
          data, static_cast<const int32_t*>(inputs[1]), out, dims_, strides_, axis_, axis_dim_, n_);
  }
  Strides dims_, strides_;
  int axis_ = 0;
  int64_t axis_dim_ = 0, n_ = 0;
  size_t elem_ = 4;
  bool wide_ = true;
};

class Gather : public Kernel {
 public:
  explicit Gather(const KernelSpec& spec) {
    const TensorInfo& data = spec.inputs.at(0);
    const TensorInfo& indices = spec.inputs.at(1);
    if (!data.is_contiguous() || !indices.is_contiguous())
      spec_error(spec, "needs contiguous data and indices");
    if (indices.dtype != DType::i64 && indices.dtype != DType::i32)
      spec_error(spec, "indices must be int32 or int64");
    int64_t axis = spec.attrs.get_int("axis", 0);
    if (axis < 0) axis += data.rank();
    if (axis < 0 || axis >= data.rank()) spec_error(spec, "axis out of range");
    axis_dim_ = data.dims[axis];
    inner_ = 1;
    for (int d = static_cast<int>(axis) + 1; d < data.rank(); ++d) inner_ *= data.dims[d];
    num_indices_ = indices.numel();
    n_ = spec.outputs.at(0).numel();
    elem_ = dtype_size(data.dtype);
    wide_ = indices.dtype == DType::i64;
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    switch (elem_) {
      case 1: launch<uint8_t>(inputs, outputs, ctx); break;
      case 2: launch<uint16_t>(inputs, outputs, ctx); break;
      case 4: launch<uint32_t>(inputs, outputs, ctx); break;
      default: launch<uint64_t>(inputs, outputs, ctx); break;
    }
    check_launch("gather_axis");
  }

 private:
  template <typename T>
  void launch(const void* const* inputs, void* const* outputs, Context& ctx) const {
    const T* data = static_cast<const T*>(inputs[0]);
    T* out = static_cast<T*>(outputs[0]);
    const unsigned blocks = blocks_for(n_, 256);
    if (wide_)
      gather_axis<T, int64_t><<<blocks, 256, 0, ctx.stream>>>(
          data, static_cast<const int64_t*>(inputs[1]), out, axis_dim_, num_indices_, inner_, n_);
    else
      gather_axis<T, int32_t><<<blocks, 256, 0, ctx.stream>>>(
          data, static_cast<const int32_t*>(inputs[1]), out, axis_dim_, num_indices_, inner_, n_);
  }
  int64_t axis_dim_ = 0, inner_ = 1, num_indices_ = 0, n_ = 0;
  size_t elem_ = 4;
  bool wide_ = true;
};

}  // namespace

std::unique_ptr<Kernel> make_gather(const KernelSpec& spec) {
  return std::make_unique<Gather>(spec);
}
std::unique_ptr<Kernel> make_gather_elements(const KernelSpec& spec) {
  return std::make_unique<GatherElements>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
