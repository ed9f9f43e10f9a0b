// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// GatherND and ReverseSequence: element copies of plain tensors of any dtype (moved by their
// width). Indices / lengths are i32 or i64, read at run time; one out of range throws from
// run() (negative GatherND indices count from the end), never reads out of bounds.
#include <omp.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelBytes = 1 << 17;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

bool index_dtype(DType t) { return t == DType::i64 || t == DType::i32; }

int64_t read_index(const void* p, bool i64, int64_t j) {
  return i64 ? static_cast<const int64_t*>(p)[j] : static_cast<const int32_t*>(p)[j];
}

// ---- GatherND: out[b, j, :] = data[b, indices[b, j, 0], ..., indices[b, j, depth-1], :] ----
// b over the batch_dims leading dims, j over the indices' other dims but the last, ":" a
// contiguous slice of the data's trailing dims.
class GatherNDKernel : public Kernel {
 public:
  GatherNDKernel(const KernelSpec& spec, int batch_dims) : name_(spec.name) {
    const TensorInfo& data = spec.inputs[0];
    const TensorInfo& ind = spec.inputs[1];
    const size_t b = static_cast<size_t>(batch_dims);
    depth_ = ind.dims.back();
    batch_ = product(data.dims, 0, b);
    points_ = product(ind.dims, b, ind.dims.size() - 1);
    slice_bytes_ = product(data.dims, b + depth_, data.dims.size()) * dtype_size(data.dtype);
    for (int64_t k = 0; k < depth_; ++k) sizes_.push_back(data.dims[b + k]);
    // strides of the indexed dims, in slices; a batch is their product
    strides_.assign(static_cast<size_t>(depth_), 1);
    for (int64_t k = depth_ - 2; k >= 0; --k) strides_[k] = strides_[k + 1] * sizes_[k + 1];
    batch_slices_ = product(sizes_, 0, sizes_.size());
    idx64_ = ind.dtype == DType::i64;
    offsets_.resize(static_cast<size_t>(batch_ * points_));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const int64_t n = batch_ * points_;
    for (int64_t w = 0; w < n; ++w) {
      int64_t off = (w / points_) * batch_slices_;
      for (int64_t k = 0; k < depth_; ++k) {
        const int64_t raw = read_index(inputs[1], idx64_, w * depth_ + k);
        const int64_t i = raw < 0 ? raw + sizes_[k] : raw;
        if (i < 0 || i >= sizes_[k])
          throw std::out_of_range("GatherND '" + name_ + "': index " + std::to_string(raw) +
                                  " out of range for a dim of size " + std::to_string(sizes_[k]));
        off += i * strides_[k];
      }
      offsets_[w] = off;
    }
    const auto* src = static_cast<const unsigned char*>(inputs[0]);
    auto* dst = static_cast<unsigned char*>(outputs[0]);
    const int64_t sb = slice_bytes_;
    const int64_t* offs = offsets_.data();
#pragma omp parallel for schedule(static) if (n * sb > kParallelBytes)
    for (int64_t w = 0; w < n; ++w) std::memcpy(dst + w * sb, src + offs[w] * sb, sb);
  }

 private:
  std::string name_;
  int64_t depth_, batch_, points_, slice_bytes_, batch_slices_;
  std::vector<int64_t> sizes_, strides_, offsets_;
  bool idx64_;
};

std::unique_ptr<Kernel> make_gather_nd(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1)
    spec_error(spec, "takes data and indices");
  const TensorInfo& data = spec.inputs[0];
  const TensorInfo& ind = spec.inputs[1];
  if (!index_dtype(ind.dtype)) spec_error(spec, "indices must be i32 or i64");
  if (!data.is_contiguous() || !ind.is_contiguous() || !spec.outputs[0].is_contiguous())
    spec_error(spec, "plain tensors only");
  const int64_t b = spec.attrs.get_int("batch_dims");
  if (ind.rank() < 1 || b < 0 || b >= ind.rank() || b >= data.rank())
    spec_error(spec, "batch_dims out of range");
  const int64_t depth = ind.dims.back();
  if (depth < 1 || b + depth > data.rank()) spec_error(spec, "index depth out of range");
  for (int64_t i = 0; i < b; ++i)
    if (ind.dims[i] != data.dims[i]) spec_error(spec, "batch dims of data and indices differ");
  return std::make_unique<GatherNDKernel>(spec, static_cast<int>(b));
}

// ---- ReverseSequence: out[b, t] = x[b, len[b] - 1 - t] for t < len[b], else x[b, t] ------
// batch_axis and time_axis are dims 0 and 1 (either order); the rest is one contiguous row.
class ReverseSequenceKernel : public Kernel {
 public:
  ReverseSequenceKernel(const KernelSpec& spec, int batch_axis) : name_(spec.name) {
    const TensorInfo& x = spec.inputs[0];
    const int time_axis = 1 - batch_axis;
    batch_ = x.dims[batch_axis];
    time_ = x.dims[time_axis];
    row_bytes_ = product(x.dims, 2, x.dims.size()) * dtype_size(x.dtype);
    const int64_t stride1 = row_bytes_, stride0 = x.dims[1] * row_bytes_;
    batch_stride_ = batch_axis == 0 ? stride0 : stride1;
    time_stride_ = batch_axis == 0 ? stride1 : stride0;
    len64_ = spec.inputs[1].dtype == DType::i64;
    lens_.resize(static_cast<size_t>(batch_));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t len = read_index(inputs[1], len64_, b);
      if (len < 0 || len > time_)
        throw std::out_of_range("ReverseSequence '" + name_ + "': sequence length " +
                                std::to_string(len) + " outside [0, " + std::to_string(time_) +
                                "]");
      lens_[b] = len;
    }
    const auto* src = static_cast<const unsigned char*>(inputs[0]);
    auto* dst = static_cast<unsigned char*>(outputs[0]);
    const int64_t batch = batch_, time = time_, rb = row_bytes_, bs = batch_stride_,
                  ts = time_stride_;
    const int64_t* lens = lens_.data();
#pragma omp parallel for schedule(static) if (batch * time * rb > kParallelBytes)
    for (int64_t w = 0; w < batch * time; ++w) {
      const int64_t b = w / time, t = w % time;
      const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
      std::memcpy(dst + b * bs + t * ts, src + b * bs + from * ts, rb);
    }
  }

 private:
  std::string name_;
  int64_t batch_, time_, row_bytes_, batch_stride_, time_stride_;
  bool len64_;
  std::vector<int64_t> lens_;
};

std::unique_ptr<Kernel> make_reverse_sequence(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1)
    spec_error(spec, "takes input and sequence_lens");
  const TensorInfo& x = spec.inputs[0];
  if (!index_dtype(spec.inputs[1].dtype)) spec_error(spec, "sequence_lens must be i32 or i64");
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous())
    spec_error(spec, "plain tensors only");
  if (x.rank() < 2) spec_error(spec, "input of rank 2 or more");
  const int64_t batch_axis = spec.attrs.get_int("batch_axis");
  const int64_t time_axis = spec.attrs.get_int("time_axis");
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    spec_error(spec, "batch_axis and time_axis must be 0 and 1");
  if (spec.inputs[1].numel() != x.dims[batch_axis])
    spec_error(spec, "one sequence length per batch entry");
  return std::make_unique<ReverseSequenceKernel>(spec, static_cast<int>(batch_axis));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("GatherND", make_gather_nd);
GRAPHKILN_REGISTER_KERNEL("ReverseSequence", make_reverse_sequence);

}  // namespace graphkiln
