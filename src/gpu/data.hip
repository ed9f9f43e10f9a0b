// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Data movement kernels with the contracts of their cpu twins (the cpu lowerings of
// targets/native/lower_data.py feed both targets):
//   "IndexMap" (src/cpu/index_map.cpp): out[o_0..o_r-1] = in[sum_a map_a[o_a]], or the fill
//     value where a map entry is -1 (Pad in every mode, nearest Resize); inputs data and an
//     optional one-element fill; attrs maps (concatenated per output dim), fill_bits;
//   "CumSum" (cumsum.cpp; attr prod=1: CumProd; the axis attribute only), "OneHot" (onehot.cpp; float indices
//     truncated, as there), "Range" (fill.cpp), "ScatterND" / "ScatterElements" (scatter.cpp; index order kept: updates
//     that may meet run one after another; an index out of range is skipped, where the cpu
//     kernel throws).
#include "gpu/common.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

#define GK_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

class DeviceInts {
 public:
  DeviceInts() = default;
  DeviceInts(const DeviceInts&) = delete;
  DeviceInts& operator=(const DeviceInts&) = delete;
  ~DeviceInts() {
    if (ptr_) (void)hipFree(ptr_);
  }
  template <typename T>
  void upload(const std::vector<T>& v) {
    const size_t bytes = v.size() * sizeof(T);
    check(hipMalloc(&ptr_, bytes < 8 ? 8 : bytes), "allocating a kernel table");
    if (bytes)
      check(hipMemcpy(ptr_, v.data(), bytes, hipMemcpyHostToDevice), "uploading a kernel table");
  }
  const int64_t* get() const { return static_cast<const int64_t*>(ptr_); }
  const float* floats() const { return static_cast<const float*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

// -- IndexMap ----------------------------------------------------------------------------
template <typename T>
__global__ void index_map_kernel(const T* src, T* dst, const int64_t* maps, Strides dims,
                                 const T* fill_in, uint64_t fill_bits, int64_t n) {
  T fill;
  if (fill_in) fill = *fill_in;
  else memcpy(&fill, &fill_bits, sizeof(T));
  GK_GRID_LOOP(i, n) {
    int64_t rest = i, offset = 0;
    bool blank = false;
    for (int d = dims.rank - 1; d >= 0; --d) {
      const int64_t m = maps[dims.strides[d] + rest % dims.dims[d]];  // strides: map starts
      rest /= dims.dims[d];
      if (m < 0) blank = true;
      offset += m;
    }
    dst[i] = blank ? fill : src[offset];
  }
}

class IndexMap : public Kernel {
 public:
  explicit IndexMap(const KernelSpec& spec) {
    const TensorInfo& out = spec.outputs.at(0);
    if (!out.is_contiguous()) spec_error(spec, "plain output only");
    es_ = dtype_size(out.dtype);
    if (dtype_size(spec.inputs.at(0).dtype) != es_) spec_error(spec, "element sizes differ");
    has_fill_ = spec.has_input(1);
    const std::vector<int64_t> maps = spec.attrs.get_ints("maps");
    int64_t at = 0;
    if (out.rank() > kMaxRank) spec_error(spec, "rank above 8");
    dims_.rank = out.rank();
    for (int d = 0; d < out.rank(); ++d) {
      dims_.dims[d] = out.dims[d];
      dims_.strides[d] = at;
      at += out.dims[d];
    }
    if (static_cast<int64_t>(maps.size()) != at)
      spec_error(spec, "maps do not match the output dims");
    maps_.upload(maps);
    fill_bits_ = static_cast<uint64_t>(spec.attrs.get_int("fill_bits", 0));
    n_ = out.numel();
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    switch (es_) {
      case 1: go<uint8_t>(inputs, outputs, ctx); break;
      case 2: go<uint16_t>(inputs, outputs, ctx); break;
      case 4: go<uint32_t>(inputs, outputs, ctx); break;
      default: go<uint64_t>(inputs, outputs, ctx); break;
    }
    check_launch("index_map_kernel");
  }

 private:
  template <typename T>
  void go(const void* const* inputs, void* const* outputs, Context& ctx) const {
    index_map_kernel<T><<<blocks_for(n_, 256), 256, 0, ctx.stream>>>(
        static_cast<const T*>(inputs[0]), static_cast<T*>(outputs[0]), maps_.get(), dims_,
        has_fill_ ? static_cast<const T*>(inputs[1]) : nullptr, fill_bits_, n_);
  }
  DeviceInts maps_;
  Strides dims_;
  size_t es_ = 4;
  bool has_fill_ = false;
  uint64_t fill_bits_ = 0;
  int64_t n_ = 0;
};

// -- CumSum ------------------------------------------------------------------------------
template <typename T, bool Prod>
__device__ inline T accumulate(T a, T b) {
  if constexpr (!Prod) {
    return a + b;
  } else if constexpr (std::is_integral<T>::value) {
    using U = typename std::make_unsigned<T>::type;  // wraps like numpy
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <typename T, bool Prod>
__global__ void cumsum_kernel(const T* x, T* y, int64_t outer, int64_t len, int64_t inner,
                              int exclusive, int reverse) {
  GK_GRID_LOOP(c, outer * inner) {
    const int64_t o = c / inner, i = c % inner;
    const T* xs = x + o * len * inner + i;
    T* ys = y + o * len * inner + i;
    T acc = Prod ? T(1) : T(0);
    for (int64_t k = 0; k < len; ++k) {
      const int64_t j = reverse ? len - 1 - k : k;
      const T v = xs[j * inner];
      if (exclusive) {
        ys[j * inner] = acc;
        acc = accumulate<T, Prod>(acc, v);
      } else {
        acc = accumulate<T, Prod>(acc, v);
        ys[j * inner] = acc;
      }
    }
  }
}

class CumSum : public Kernel {
 public:
  explicit CumSum(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    if (!x.is_contiguous() || !spec.outputs.at(0).is_contiguous())
      spec_error(spec, "plain data only");
    if (!spec.attrs.has("axis")) spec_error(spec, "the gpu kernel takes a constant axis only");
    const int rank = x.rank();
    const int axis = static_cast<int>(spec.attrs.get_int("axis"));
    dtype_ = x.dtype;
    outer_ = 1;
    inner_ = 1;
    len_ = rank ? x.dims[axis] : 1;
    for (int d = 0; d < axis; ++d) outer_ *= x.dims[d];
    for (int d = axis + 1; d < rank; ++d) inner_ *= x.dims[d];
    exclusive_ = static_cast<int>(spec.attrs.get_int("exclusive", 0));
    reverse_ = static_cast<int>(spec.attrs.get_int("reverse", 0));
    prod_ = spec.attrs.get_int("prod", 0) != 0;
    switch (dtype_) {
      case DType::f32:
      case DType::f64:
      case DType::i32:
      case DType::i64:
      case DType::u32:
      case DType::u64: break;
      default: spec_error(spec, "unsupported dtype");
    }
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (outer_ * len_ * inner_ == 0) return;
    switch (dtype_) {
      case DType::f32: go<float>(inputs, outputs, ctx); break;
      case DType::f64: go<double>(inputs, outputs, ctx); break;
      case DType::i32: go<int32_t>(inputs, outputs, ctx); break;
      case DType::i64: go<int64_t>(inputs, outputs, ctx); break;
      case DType::u32: go<uint32_t>(inputs, outputs, ctx); break;
      default: go<uint64_t>(inputs, outputs, ctx); break;
    }
    check_launch("cumsum_kernel");
  }

 private:
  template <typename T>
  void go(const void* const* inputs, void* const* outputs, Context& ctx) const {
    const unsigned blocks = blocks_for(outer_ * inner_, 256);
    if (prod_)
      cumsum_kernel<T, true><<<blocks, 256, 0, ctx.stream>>>(static_cast<const T*>(inputs[0]),
                                                             static_cast<T*>(outputs[0]), outer_,
                                                             len_, inner_, exclusive_, reverse_);
    else
      cumsum_kernel<T, false><<<blocks, 256, 0, ctx.stream>>>(static_cast<const T*>(inputs[0]),
                                                              static_cast<T*>(outputs[0]), outer_,
                                                              len_, inner_, exclusive_, reverse_);
  }
  bool prod_ = false;
  DType dtype_ = DType::f32;
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
  int exclusive_ = 0, reverse_ = 0;
};

// -- OneHot ------------------------------------------------------------------------------
template <typename T, typename I>
__global__ void one_hot_kernel(const I* idx, const T* values, T* out, int64_t depth, int64_t inner,
                               int64_t n) {
  GK_GRID_LOOP(k, n) {
    const int64_t i = k % inner, d = (k / inner) % depth, o = k / (inner * depth);
    int64_t v = static_cast<int64_t>(idx[o * inner + i]);
    if (v < 0) v += depth;
    out[k] = v == d ? values[1] : values[0];
  }
}

class OneHot : public Kernel {
 public:
  explicit OneHot(const KernelSpec& spec) {
    const TensorInfo& out = spec.outputs.at(0);
    if (!out.is_contiguous() || !spec.inputs.at(0).is_contiguous())
      spec_error(spec, "plain data only");
    if (spec.inputs.size() != 3 || !spec.has_input(2))
      spec_error(spec, "takes indices, depth, values");
    if (spec.inputs[2].numel() < 2 || spec.inputs[2].dtype != out.dtype)
      spec_error(spec, "values must hold (off, on) of the output type");
    const int axis = static_cast<int>(spec.attrs.get_int("axis"));
    depth_ = out.dims[axis];
    inner_ = 1;
    for (int d = axis + 1; d < out.rank(); ++d) inner_ *= out.dims[d];
    idx_ = spec.inputs[0].dtype;
    if (idx_ != DType::i64 && idx_ != DType::i32 && idx_ != DType::f32 && idx_ != DType::f64)
      spec_error(spec, "indices must be int32, int64, float32 or float64");
    es_ = dtype_size(out.dtype);
    n_ = out.numel();
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    switch (es_) {
      case 1: go<uint8_t>(inputs, outputs, ctx); break;
      case 2: go<uint16_t>(inputs, outputs, ctx); break;
      case 4: go<uint32_t>(inputs, outputs, ctx); break;
      default: go<uint64_t>(inputs, outputs, ctx); break;
    }
    check_launch("one_hot_kernel");
  }

 private:
  template <typename T>
  void go(const void* const* inputs, void* const* outputs, Context& ctx) const {
    const T* values = static_cast<const T*>(inputs[2]);
    T* out = static_cast<T*>(outputs[0]);
    const unsigned blocks = blocks_for(n_, 256);
    switch (idx_) {
      case DType::i64:
        one_hot_kernel<T, int64_t><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const int64_t*>(inputs[0]), values, out, depth_, inner_, n_);
        break;
      case DType::i32:
        one_hot_kernel<T, int32_t><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const int32_t*>(inputs[0]), values, out, depth_, inner_, n_);
        break;
      case DType::f32:
        one_hot_kernel<T, float><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const float*>(inputs[0]), values, out, depth_, inner_, n_);
        break;
      default:
        one_hot_kernel<T, double><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const double*>(inputs[0]), values, out, depth_, inner_, n_);
        break;
    }
  }
  int64_t depth_ = 1, inner_ = 1, n_ = 0;
  size_t es_ = 4;
  DType idx_ = DType::i64;
};

// -- Range -------------------------------------------------------------------------------
template <typename T, typename W>
__global__ void range_kernel(const T* start, const T* delta, T* out, int64_t n) {
  const W s = static_cast<W>(*start), d = static_cast<W>(*delta);
  GK_GRID_LOOP(i, n) out[i] = static_cast<T>(s + static_cast<W>(i) * d);
}

class Range : public Kernel {
 public:
  explicit Range(const KernelSpec& spec) {
    if (spec.inputs.size() != 3 || spec.outputs.size() != 1)
      spec_error(spec, "start, limit, delta");
    dtype_ = spec.outputs[0].dtype;
    switch (dtype_) {
      case DType::f32:
      case DType::f64:
      case DType::i64:
      case DType::i32:
      case DType::i16:
      case DType::i8: break;
      default: spec_error(spec, "unsupported dtype");
    }
    n_ = spec.outputs[0].numel();
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    const unsigned blocks = blocks_for(n_, 256);
    switch (dtype_) {
      case DType::f32:
        range_kernel<float, float><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[2]),
            static_cast<float*>(outputs[0]), n_);
        break;
      case DType::f64:
        range_kernel<double, double><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const double*>(inputs[0]), static_cast<const double*>(inputs[2]),
            static_cast<double*>(outputs[0]), n_);
        break;
      case DType::i64:
        range_kernel<int64_t, int64_t><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const int64_t*>(inputs[0]), static_cast<const int64_t*>(inputs[2]),
            static_cast<int64_t*>(outputs[0]), n_);
        break;
      case DType::i32:
        range_kernel<int32_t, int64_t><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const int32_t*>(inputs[0]), static_cast<const int32_t*>(inputs[2]),
            static_cast<int32_t*>(outputs[0]), n_);
        break;
      case DType::i16:
        range_kernel<int16_t, int64_t><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const int16_t*>(inputs[0]), static_cast<const int16_t*>(inputs[2]),
            static_cast<int16_t*>(outputs[0]), n_);
        break;
      default:
        range_kernel<int8_t, int64_t><<<blocks, 256, 0, ctx.stream>>>(
            static_cast<const int8_t*>(inputs[0]), static_cast<const int8_t*>(inputs[2]),
            static_cast<int8_t*>(outputs[0]), n_);
        break;
    }
    check_launch("range_kernel");
  }

 private:
  DType dtype_ = DType::f32;
  int64_t n_ = 0;
};

// -- ScatterND / ScatterElements ---------------------------------------------------------
enum Reduce : int { kNone, kAdd, kMul, kMax, kMin };

template <typename T>
__device__ inline void combine(T* d, T u, int r) {
  switch (r) {
    case kNone: *d = u; break;
    case kAdd: *d = *d + u; break;
    case kMul: *d = *d * u; break;
    case kMax: *d = *d < u ? u : *d; break;
    default: *d = u < *d ? u : *d; break;
  }
}

__device__ inline int64_t wrap_index(int64_t k, int64_t size) {
  if (k < 0) k += size;
  return (k < 0 || k >= size) ? -1 : k;
}

// one block: thread t handles slice elements t, t + blockDim...; indices in order
template <typename T, typename I>
__global__ void scatter_nd_kernel(const I* ind, const T* upd, T* out, Strides sizes, int64_t count,
                                  int64_t slice, int r) {
  for (int64_t n = 0; n < count; ++n) {
    int64_t offset = 0;
    bool ok = true;
    for (int j = 0; j < sizes.rank; ++j) {
      const int64_t k = wrap_index(static_cast<int64_t>(ind[n * sizes.rank + j]), sizes.dims[j]);
      if (k < 0) ok = false;
      offset += k * sizes.strides[j];
    }
    if (!ok) continue;
    for (int64_t e = threadIdx.x; e < slice; e += blockDim.x)
      combine(out + offset + e, upd[n * slice + e], r);
  }
}

// one thread, index order
template <typename T, typename I>
__global__ void scatter_elements_kernel(const I* ind, const T* upd, T* out, Strides ind_dims,
                                        Strides data_strides, int axis, int64_t axis_size,
                                        int64_t n, int r) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e, offset = 0;
    bool ok = true;
    for (int d = ind_dims.rank - 1; d >= 0; --d) {
      int64_t coord = rest % ind_dims.dims[d];
      rest /= ind_dims.dims[d];
      if (d == axis) {
        coord = wrap_index(static_cast<int64_t>(ind[e]), axis_size);
        if (coord < 0) ok = false;
      }
      offset += coord * data_strides.strides[d];
    }
    if (ok) combine(out + offset, upd[e], r);
  }
}

class Scatter : public Kernel {
 public:
  Scatter(const KernelSpec& spec, bool nd) : nd_(nd) {
    const TensorInfo& data = spec.inputs.at(0);
    const TensorInfo& ind = spec.inputs.at(1);
    const TensorInfo& upd = spec.inputs.at(2);
    const TensorInfo& out = spec.outputs.at(0);
    if (!data.is_contiguous() || !ind.is_contiguous() || !upd.is_contiguous() ||
        !out.is_contiguous())
      spec_error(spec, "plain data only");
    if (data.rank() > kMaxRank) spec_error(spec, "rank above 8");
    wide_ = ind.dtype == DType::i64;
    if (!wide_ && ind.dtype != DType::i32) spec_error(spec, "indices must be int32 or int64");
    const std::string r = spec.attrs.get_str("reduction", "none");
    if (r == "none") r_ = kNone;
    else if (r == "add") r_ = kAdd;
    else if (r == "mul") r_ = kMul;
    else if (r == "max") r_ = kMax;
    else if (r == "min") r_ = kMin;
    else spec_error(spec, "unknown reduction " + r);
    dtype_ = data.dtype;
    es_ = dtype_size(dtype_);
    if (r_ != kNone && dtype_ != DType::f32 && dtype_ != DType::f64 && dtype_ != DType::i32 &&
        dtype_ != DType::i64)
      spec_error(spec, "reductions take float32, float64, int32 or int64");
    total_bytes_ = static_cast<size_t>(data.numel()) * es_;
    std::vector<int64_t> rm(data.rank(), 1);
    for (int d = data.rank() - 2; d >= 0; --d) rm[d] = rm[d + 1] * data.dims[d + 1];
    if (nd) {
      const int depth = static_cast<int>(ind.dims.empty() ? 0 : ind.dims.back());
      if (depth > data.rank()) spec_error(spec, "index depth above data's rank");
      sizes_.rank = depth;
      for (int j = 0; j < depth; ++j) {
        sizes_.dims[j] = data.dims[j];
        sizes_.strides[j] = rm[j];
      }
      count_ = 1;
      for (size_t i = 0; i + 1 < ind.dims.size(); ++i) count_ *= ind.dims[i];
      slice_ = 1;
      for (int d = depth; d < data.rank(); ++d) slice_ *= data.dims[d];
    } else {
      axis_ = static_cast<int>(spec.attrs.get_int("axis"));
      if (ind.rank() != data.rank()) spec_error(spec, "indices and data differ in rank");
      sizes_.rank = ind.rank();
      strides_.rank = ind.rank();
      for (int d = 0; d < ind.rank(); ++d) {
        sizes_.dims[d] = ind.dims[d];
        strides_.strides[d] = rm[d];
      }
      axis_size_ = data.dims[axis_];
      count_ = ind.numel();
    }
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (outputs[0] != inputs[0] && total_bytes_)
      check(
          hipMemcpyAsync(outputs[0], inputs[0], total_bytes_, hipMemcpyDeviceToDevice, ctx.stream),
          "scatter copy");
    if (count_ == 0) return;
    switch (dtype_) {
      case DType::f32: pick<float>(inputs, outputs, ctx); break;
      case DType::f64: pick<double>(inputs, outputs, ctx); break;
      case DType::i32: pick<int32_t>(inputs, outputs, ctx); break;
      case DType::i64: pick<int64_t>(inputs, outputs, ctx); break;
      default:
        switch (es_) {
          case 1: pick<uint8_t>(inputs, outputs, ctx); break;
          case 2: pick<uint16_t>(inputs, outputs, ctx); break;
          case 4: pick<uint32_t>(inputs, outputs, ctx); break;
          default: pick<uint64_t>(inputs, outputs, ctx); break;
        }
    }
    check_launch(nd_ ? "scatter_nd_kernel" : "scatter_elements_kernel");
  }

 private:
  template <typename T>
  void pick(const void* const* inputs, void* const* outputs, Context& ctx) const {
    if (wide_) go<T, int64_t>(inputs, outputs, ctx);
    else go<T, int32_t>(inputs, outputs, ctx);
  }
  template <typename T, typename I>
  void go(const void* const* inputs, void* const* outputs, Context& ctx) const {
    const I* ind = static_cast<const I*>(inputs[1]);
    const T* upd = static_cast<const T*>(inputs[2]);
    T* out = static_cast<T*>(outputs[0]);
    if (nd_)
      scatter_nd_kernel<T, I><<<1, 256, 0, ctx.stream>>>(ind, upd, out, sizes_, count_, slice_, r_);
    else
      scatter_elements_kernel<T, I>
          <<<1, 1, 0, ctx.stream>>>(ind, upd, out, sizes_, strides_, axis_, axis_size_, count_, r_);
  }
  bool nd_ = true, wide_ = true;
  int r_ = kNone, axis_ = 0;
  DType dtype_ = DType::f32;
  size_t es_ = 4, total_bytes_ = 0;
  Strides sizes_, strides_;
  int64_t count_ = 0, slice_ = 1, axis_size_ = 1;
};

// -- ResizeAxis --------------------------------------------------------------------------
// float32 x [outer, in_len, inner] -> y [outer, out_len, inner]: y[o, j, i] = sum over the
// taps t of x[o, index[j, t], i] * weight[j, t], summed in tap order (linear and cubic
// Resize, one step per resized axis; the lowering computes the taps with the ref target's
// own filter code).
__global__ void resize_axis_kernel(const float* x, float* y, const int64_t* index, const float* w,
                                   int64_t in_len, int64_t out_len, int64_t inner, int taps,
                                   int64_t n) {
  GK_GRID_LOOP(k, n) {
    const int64_t i = k % inner, j = (k / inner) % out_len, o = k / (inner * out_len);
    const float* xs = x + o * in_len * inner + i;
    const int64_t* ix = index + j * taps;
    const float* wj = w + j * taps;
    float acc = xs[ix[0] * inner] * wj[0];
    for (int t = 1; t < taps; ++t) acc = acc + xs[ix[t] * inner] * wj[t];
    y[k] = acc;
  }
}

class ResizeAxis : public Kernel {
 public:
  explicit ResizeAxis(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    const TensorInfo& y = spec.outputs.at(0);
    if (x.dtype != DType::f32 || y.dtype != DType::f32 || !x.is_contiguous() || !y.is_contiguous())
      spec_error(spec, "plain float32 data only");
    outer_ = spec.attrs.get_int("outer");
    in_len_ = spec.attrs.get_int("in_len");
    out_len_ = spec.attrs.get_int("out_len");
    inner_ = spec.attrs.get_int("inner");
    taps_ = static_cast<int>(spec.attrs.get_int("taps"));
    if (outer_ * in_len_ * inner_ != x.numel() || outer_ * out_len_ * inner_ != y.numel() ||
        taps_ < 1)
      spec_error(spec, "sizes do not match the data");
    const std::vector<int64_t> index = spec.attrs.get_ints("index");
    const std::vector<double> weights = spec.attrs.get_floats("weights");
    if (static_cast<int64_t>(index.size()) != out_len_ * taps_ || index.size() != weights.size())
      spec_error(spec, "index and weights must hold out_len * taps entries");
    for (int64_t v : index)
      if (v < 0 || v >= in_len_) spec_error(spec, "a tap index is out of range");
    index_.upload(index);
    weights_.upload(std::vector<float>(weights.begin(), weights.end()));
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    const int64_t n = outer_ * out_len_ * inner_;
    if (n == 0) return;
    resize_axis_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(
        static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]), index_.get(),
        weights_.floats(), in_len_, out_len_, inner_, taps_, n);
    check_launch("resize_axis_kernel");
  }

 private:
  DeviceInts index_, weights_;
  int64_t outer_ = 1, in_len_ = 1, out_len_ = 1, inner_ = 1;
  int taps_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> make_resize_axis(const KernelSpec& spec) {
  return std::make_unique<ResizeAxis>(spec);
}
std::unique_ptr<Kernel> make_index_map(const KernelSpec& spec) {
  return std::make_unique<IndexMap>(spec);
}
std::unique_ptr<Kernel> make_cumsum(const KernelSpec& spec) {
  return std::make_unique<CumSum>(spec);
}
std::unique_ptr<Kernel> make_one_hot(const KernelSpec& spec) {
  return std::make_unique<OneHot>(spec);
}
std::unique_ptr<Kernel> make_range(const KernelSpec& spec) { return std::make_unique<Range>(spec); }
std::unique_ptr<Kernel> make_scatter_nd(const KernelSpec& spec) {
  return std::make_unique<Scatter>(spec, true);
}
std::unique_ptr<Kernel> make_scatter_elements(const KernelSpec& spec) {
  return std::make_unique<Scatter>(spec, false);
}

}  // namespace gpu
}  // namespace graphkiln
