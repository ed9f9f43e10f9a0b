// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "IndexMap": out[o_0, ..., o_r-1] = in[sum_a map_a[o_a]], or a fill value where any
// map_a[o_a] is -1. The per-axis maps (element offsets into the input, strides applied) come
// from the lowering: Pad (constant / reflect / edge / wrap) and nearest Resize use it.
//
// inputs: data, optional fill value (a one-element tensor of data's dtype)
// attrs: maps (the output dims' maps, concatenated), fill_bits (the fill value's bytes,
// little-endian, used when the fill input is absent)
#include <omp.h>

#include <cstring>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelElems = 32768;

class IndexMapKernel : public Kernel {
 public:
  IndexMapKernel(const KernelSpec& spec, std::vector<int64_t> maps)
      : maps_(std::move(maps)), has_fill_(spec.has_input(1)) {
    const TensorInfo& out = spec.outputs[0];
    es_ = dtype_size(out.dtype);
    dims_ = out.dims;
    if (dims_.empty()) dims_ = {1};
    int64_t at = 0;
    for (int64_t d : dims_) {
      starts_.push_back(at);
      at += d;
    }
    const int64_t bits = spec.attrs.get_int("fill_bits", 0);
    std::memcpy(fill_, &bits, sizeof(bits));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    unsigned char fill[8];
    std::memcpy(fill, fill_, 8);
    if (has_fill_) std::memcpy(fill, inputs[1], es_);
    switch (es_) {
      case 1: map<uint8_t>(inputs[0], outputs[0], fill); break;
      case 2: map<uint16_t>(inputs[0], outputs[0], fill); break;
      case 4: map<uint32_t>(inputs[0], outputs[0], fill); break;
      default: map<uint64_t>(inputs[0], outputs[0], fill); break;
    }
  }

 private:
  template <typename T>
  void map(const void* src_v, void* dst_v, const unsigned char* fill_bytes) const {
    const T* src = static_cast<const T*>(src_v);
    T* dst = static_cast<T*>(dst_v);
    T fill;
    std::memcpy(&fill, fill_bytes, sizeof(T));
    const int rank = static_cast<int>(dims_.size());
    const int64_t inner = dims_[rank - 1];
    int64_t outer = 1;
    for (int i = 0; i < rank - 1; ++i) outer *= dims_[i];
    const int64_t* last = maps_.data() + starts_[rank - 1];
#pragma omp parallel for schedule(static) if (outer * inner > kParallelElems)
    for (int64_t o = 0; o < outer; ++o) {
      int64_t rem = o, base = 0;
      bool blank = false;
      for (int i = rank - 2; i >= 0; --i) {
        const int64_t m = maps_[starts_[i] + rem % dims_[i]];
        rem /= dims_[i];
        if (m < 0) blank = true;
        base += m;
      }
      T* d = dst + o * inner;
      if (blank) {
        for (int64_t k = 0; k < inner; ++k) d[k] = fill;
        continue;
      }
      const T* s = src + base;
      for (int64_t k = 0; k < inner; ++k) d[k] = last[k] < 0 ? fill : s[last[k]];
    }
  }

  std::vector<int64_t> maps_, dims_, starts_;
  bool has_fill_;
  size_t es_;
  unsigned char fill_[8];
};

std::unique_ptr<Kernel> make_index_map(const KernelSpec& spec) {
  if (spec.inputs.empty() || spec.outputs.size() != 1) spec_error(spec, "takes data [, fill]");
  const TensorInfo& in = spec.inputs[0];
  const TensorInfo& out = spec.outputs[0];
  if (dtype_size(in.dtype) != dtype_size(out.dtype)) spec_error(spec, "element sizes differ");
  if (!out.is_contiguous()) spec_error(spec, "plain output only");
  if (spec.has_input(1) &&
      (spec.inputs[1].numel() < 1 || dtype_size(spec.inputs[1].dtype) != dtype_size(out.dtype)))
    spec_error(spec, "fill value must be one element of the data's type");
  auto maps = spec.attrs.get_ints("maps");
  int64_t total = 0;
  for (int64_t d : out.dims) total += d;
  if (out.dims.empty()) total = 1;
  if (static_cast<int64_t>(maps.size()) != total) spec_error(spec, "maps do not fit the dims");
  // every reachable input offset inside the input
  int64_t hi = 0;
  size_t at = 0;
  std::vector<int64_t> dims = out.dims.empty() ? std::vector<int64_t>{1} : out.dims;
  for (int64_t d : dims) {
    int64_t m = 0;
    for (int64_t k = 0; k < d; ++k) {
      if (maps[at + k] < -1) spec_error(spec, "bad map entry");
      m = std::max(m, maps[at + k]);
    }
    hi += m;
    at += d;
  }
  if (out.numel() > 0 && hi >= in.numel() && in.numel() >= 0) {
    bool any = false;
    for (int64_t m : maps) any = any || m >= 0;
    if (any) spec_error(spec, "maps read outside the input");
  }
  return std::make_unique<IndexMapKernel>(spec, std::move(maps));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("IndexMap", make_index_map);

}  // namespace graphkiln
