// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Unique of any core dtype, flattened (attr axis -1) or of the slices along an axis: the
// distinct slices (compared lexicographically by value: float16 / bfloat16 as numbers,
// -0.0 equal to 0.0, NaN after every number and equal to NaN), sorted ascending
// (sorted 1) or in the order of their first occurrence (sorted 0). Outputs: Y (each
// distinct slice as at its first occurrence), indices (first occurrences), inverse_indices
// (every slice's position in Y), counts, and the count of distinct slices (i64 [1]).
// Y / indices / counts have the bound of rows (the input's length along the axis); the
// rows after the result are zeros and the cpu target cuts them off by the count
// (targets/cpu/segments.py, COUNTED_KERNELS).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/kernel.hpp"
#include "cpu/select_values.hpp"

namespace graphkiln {
namespace {

namespace sv = select_values;

// a < b with NaN after every number (NaN == NaN)
template <typename K>
bool key_less(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

template <typename K>
bool key_equal(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  }
  return a == b;
}

class UniqueKernel : public Kernel {
 public:
  explicit UniqueKernel(const KernelSpec& spec)
      : dtype_(spec.inputs[0].dtype), sorted_(spec.attrs.get_int("sorted") != 0) {
    const TensorInfo& x = spec.inputs[0];
    const int64_t axis = spec.attrs.get_int("axis");
    const select_values::AxisSplit split(x, axis);
    outer_ = split.outer, n_ = split.n, inner_ = split.inner;
    elem_ = dtype_size(dtype_);
  }

  void run(const void* const* inputs, void* const* outputs) override {
    switch (sv::kind_of(dtype_)) {
      case sv::Kind::floating: return unique<double>(inputs[0], outputs, sv::as_double);
      case sv::Kind::signed_int: return unique<int64_t>(inputs[0], outputs, sv::as_int64);
      default: return unique<uint64_t>(inputs[0], outputs, sv::as_uint64);
    }
  }

 private:
  template <typename K, typename Read>
  void unique(const void* x, void* const* outputs, Read read) {
    const int64_t width = outer_ * inner_;
    // slice k's elements in a row: keys[k * width + o * inner + i] = x[o, k, i]
    std::vector<K> keys(static_cast<size_t>(n_ * width));
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t k = 0; k < n_; ++k)
        for (int64_t i = 0; i < inner_; ++i)
          keys[k * width + o * inner_ + i] = read(dtype_, x, (o * n_ + k) * inner_ + i);
    auto less = [&](int64_t a, int64_t b) {
      const K* p = keys.data() + a * width;
      const K* q = keys.data() + b * width;
      for (int64_t j = 0; j < width; ++j) {
        if (key_less(p[j], q[j])) return true;
        if (key_less(q[j], p[j])) return false;
      }
      return false;
    };
    auto equal = [&](int64_t a, int64_t b) {
      const K* p = keys.data() + a * width;
      const K* q = keys.data() + b * width;
      for (int64_t j = 0; j < width; ++j)
        if (!key_equal(p[j], q[j])) return false;
      return true;
    };
    std::vector<int64_t> order(static_cast<size_t>(n_));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), less);  // equal slices: first one first
    // groups of equal slices in sorted order: [starts[g], starts[g + 1]) of `order`
    std::vector<int64_t> starts;
    for (int64_t s = 0; s < n_; ++s)
      if (s == 0 || !equal(order[s - 1], order[s])) starts.push_back(s);
    const int64_t groups = static_cast<int64_t>(starts.size());
    starts.push_back(n_);
    std::vector<int64_t> by_output(static_cast<size_t>(groups));  // group of each Y row
    std::iota(by_output.begin(), by_output.end(), 0);
    if (!sorted_)  // order of first occurrence: a group's first member is its smallest index
      std::sort(by_output.begin(), by_output.end(),
                [&](int64_t a, int64_t b) { return order[starts[a]] < order[starts[b]]; });
    char* y = static_cast<char*>(outputs[0]);
    auto* indices = static_cast<int64_t*>(outputs[1]);
    auto* inverse = static_cast<int64_t*>(outputs[2]);
    auto* counts = static_cast<int64_t*>(outputs[3]);
    const auto* src = static_cast<const char*>(x);
    const size_t row_bytes = static_cast<size_t>(inner_) * elem_;
    std::memset(y, 0, static_cast<size_t>(outer_ * n_) * row_bytes);
    std::fill(indices, indices + n_, int64_t{0});
    std::fill(counts, counts + n_, int64_t{0});
    for (int64_t j = 0; j < groups; ++j) {
      const int64_t g = by_output[j];
      const int64_t first = order[starts[g]];
      indices[j] = first;
      counts[j] = starts[g + 1] - starts[g];
      for (int64_t s = starts[g]; s < starts[g + 1]; ++s) inverse[order[s]] = j;
      for (int64_t o = 0; o < outer_; ++o)
        std::memcpy(y + (o * n_ + j) * row_bytes, src + (o * n_ + first) * row_bytes, row_bytes);
    }
    static_cast<int64_t*>(outputs[4])[0] = groups;
  }

  DType dtype_;
  bool sorted_;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
  size_t elem_;
};

std::unique_ptr<Kernel> make_unique_kernel(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 5)
    spec_error(spec, "takes X; makes Y, indices, inverse_indices, counts and the count");
  const TensorInfo& x = spec.inputs[0];
  const int64_t axis = spec.attrs.get_int("axis");
  if (axis >= x.rank()) spec_error(spec, "axis out of range");
  const int64_t n = axis < 0 ? x.numel() : x.dims[axis];
  const TensorInfo& y = spec.outputs[0];
  if (y.dtype != x.dtype || y.numel() != x.numel())
    spec_error(spec, "Y must have X's dtype and the bound of X's elements");
  for (int i = 1; i < 4; ++i)
    if (spec.outputs[i].dtype != DType::i64 || spec.outputs[i].numel() != n)
      spec_error(spec, "indices, inverse_indices and counts must be i64 of the slices' count");
  if (spec.outputs[4].dtype != DType::i64 || spec.outputs[4].numel() != 1)
    spec_error(spec, "the count must be i64 [1]");
  if (!x.is_contiguous() || !y.is_contiguous()) spec_error(spec, "plain tensors only");
  return std::make_unique<UniqueKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Unique", make_unique_kernel);

}  // namespace graphkiln
