// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Casts from and to the one-byte types the C++ core sees as u8 storage (float8 e4m3fn /
// e4m3fnuz / e5m2 / e5m2fnuz / e8m0, float4e2m1, int4 / uint4, int2 / uint2, each held one
// per byte as numpy's ml_dtypes does). The lowering (lower_cast.py) computes every table
// from the ref conversion, so results match ref bit for bit:
//   "CastLookup": y[i] = table[bits of x[i]] (x one or two bytes per element: 256 or 65536
//     entries; entries of y's size, the table is input 1; x and y plain, or channels-last
//     alike: targets/cpu/lower_byte_table.py's functions of one byte use it too),
//   "CastSteps": float32 / float64 x -> one byte: a step function of |x|'s bit pattern
//     (attrs pos_breaks / pos_codes, neg_breaks / neg_codes: codes[k] holds from
//     breaks[k - 1] on; nan_code),
//   "CastSubByteInt": float32 / float64 / integer x -> int4 / uint4 / int2 / uint2:
//     truncate (non-finite -> 0), wrap to `bits` bits, byte = codes[low bits].
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelElems = 1 << 16;

template <typename I, typename E>
void lookup(const I* x, const E* table, E* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelElems)
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

class LookupKernel : public Kernel {
 public:
  LookupKernel(int64_t n, size_t index_bytes, size_t entry_bytes)
      : n_(n), index_bytes_(index_bytes), entry_bytes_(entry_bytes) {}

  void run(const void* const* inputs, void* const* outputs) override {
    if (index_bytes_ == 1)
      return dispatch(static_cast<const uint8_t*>(inputs[0]), inputs[1], outputs[0]);
    dispatch(static_cast<const uint16_t*>(inputs[0]), inputs[1], outputs[0]);
  }

 private:
  template <typename I>
  void dispatch(const I* x, const void* table, void* y) {
    switch (entry_bytes_) {
      case 1: return lookup(x, static_cast<const uint8_t*>(table), static_cast<uint8_t*>(y), n_);
      case 2: return lookup(x, static_cast<const uint16_t*>(table), static_cast<uint16_t*>(y), n_);
      case 4: return lookup(x, static_cast<const uint32_t*>(table), static_cast<uint32_t*>(y), n_);
      default: return lookup(x, static_cast<const uint64_t*>(table), static_cast<uint64_t*>(y), n_);
    }
  }

  int64_t n_;
  size_t index_bytes_, entry_bytes_;
};

void check_plain_pair(const KernelSpec& spec) {
  if (spec.outputs.size() != 1) spec_error(spec, "takes one output");
  const TensorInfo& x = spec.inputs[0];
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  if (x.dims != spec.outputs[0].dims) spec_error(spec, "x and y dims differ");
}

// Plain, or both channels-last with the same strides: element i of x's bytes maps to
// element i of y's either way.
void check_dense_pair(const KernelSpec& spec) {
  if (spec.outputs.size() != 1) spec_error(spec, "takes one output");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  if (x.dims != y.dims) spec_error(spec, "x and y dims differ");
  const bool plain = x.is_contiguous() && y.is_contiguous();
  const bool channels_last = x.is_channels_last() && y.is_channels_last() && x.strides == y.strides;
  if (!plain && !channels_last) spec_error(spec, "x and y both plain or both channels-last");
}

std::unique_ptr<Kernel> make_lookup(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || !spec.has_input(1)) spec_error(spec, "takes x and a table");
  check_dense_pair(spec);
  const size_t ib = dtype_size(spec.inputs[0].dtype), eb = dtype_size(spec.outputs[0].dtype);
  if (ib != 1 && ib != 2) spec_error(spec, "x must have one or two bytes per element");
  const TensorInfo& table = spec.inputs[1];
  if (table.numel() != (ib == 1 ? 256 : 65536) || dtype_size(table.dtype) != eb)
    spec_error(spec, "the table must hold 2**(8 * x's size) entries of y's size");
  return std::make_unique<LookupKernel>(spec.outputs[0].numel(), ib, eb);
}

template <typename F, typename U>
class StepsKernel : public Kernel {
 public:
  StepsKernel(int64_t n, std::vector<U> pos_breaks, std::vector<uint8_t> pos_codes,
              std::vector<U> neg_breaks, std::vector<uint8_t> neg_codes, uint8_t nan_code)
      : n_(n), pb_(std::move(pos_breaks)), pc_(std::move(pos_codes)), nb_(std::move(neg_breaks)),
        nc_(std::move(neg_codes)), nan_(nan_code) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const U* x = static_cast<const U*>(inputs[0]);
    uint8_t* y = static_cast<uint8_t*>(outputs[0]);
    constexpr int kBits = sizeof(U) * 8;
    constexpr U kSign = U(1) << (kBits - 1);
    const U inf_bits = std::is_same_v<F, float> ? U(0x7F800000u) : U(0x7FF0000000000000ull);
    const int64_t n = n_;
#pragma omp parallel for schedule(static) if (n > kParallelElems)
    for (int64_t i = 0; i < n; ++i) {
      const U bits = x[i];
      const U mag = bits & ~kSign;
      if (mag > inf_bits) {
        y[i] = nan_;
        continue;
      }
      const bool neg = (bits & kSign) != 0;
      const std::vector<U>& br = neg ? nb_ : pb_;
      const std::vector<uint8_t>& codes = neg ? nc_ : pc_;
      const size_t k =
          static_cast<size_t>(std::upper_bound(br.begin(), br.end(), mag) - br.begin());
      y[i] = codes[k];
    }
  }

 private:
  int64_t n_;
  std::vector<U> pb_;
  std::vector<uint8_t> pc_;
  std::vector<U> nb_;
  std::vector<uint8_t> nc_;
  uint8_t nan_;
};

template <typename U>
std::vector<U> to_bits(const std::vector<int64_t>& v) {
  std::vector<U> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<U>(static_cast<uint64_t>(v[i]));
  return out;
}

std::vector<uint8_t> to_codes(const KernelSpec& spec, const std::vector<int64_t>& v,
                              size_t breaks) {
  if (v.size() != breaks + 1) spec_error(spec, "codes must hold one more entry than breaks");
  std::vector<uint8_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<uint8_t>(v[i]);
  return out;
}

std::unique_ptr<Kernel> make_steps(const KernelSpec& spec) {
  if (spec.inputs.size() != 1) spec_error(spec, "takes one input");
  check_plain_pair(spec);
  if (dtype_size(spec.outputs[0].dtype) != 1) spec_error(spec, "y must have one byte per element");
  const auto pb = spec.attrs.get_ints("pos_breaks"), nb = spec.attrs.get_ints("neg_breaks");
  const auto pc = to_codes(spec, spec.attrs.get_ints("pos_codes"), pb.size());
  const auto nc = to_codes(spec, spec.attrs.get_ints("neg_codes"), nb.size());
  const uint8_t nan_code = static_cast<uint8_t>(spec.attrs.get_int("nan_code"));
  const int64_t n = spec.outputs[0].numel();
  if (!std::is_sorted(pb.begin(), pb.end()) || !std::is_sorted(nb.begin(), nb.end()))
    spec_error(spec, "breaks must be sorted");
  if (spec.inputs[0].dtype == DType::f32)
    return std::make_unique<StepsKernel<float, uint32_t>>(n, to_bits<uint32_t>(pb), pc,
                                                          to_bits<uint32_t>(nb), nc, nan_code);
  if (spec.inputs[0].dtype == DType::f64)
    return std::make_unique<StepsKernel<double, uint64_t>>(n, to_bits<uint64_t>(pb), pc,
                                                           to_bits<uint64_t>(nb), nc, nan_code);
  spec_error(spec, "x must be float32 or float64");
}

template <typename T>
inline int64_t as_int64(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) return 0;
    const T t = std::trunc(v);
    // numpy's float -> int64 on x86-64 gives INT64_MIN out of range: low bits 0
    if (t >= T(9223372036854775808.0) || t < T(-9223372036854775808.0)) return INT64_MIN;
    return static_cast<int64_t>(t);
  } else {
    return static_cast<int64_t>(v);
  }
}

template <typename T>
class SubByteIntKernel : public Kernel {
 public:
  SubByteIntKernel(int64_t n, int bits, std::vector<uint8_t> codes)
      : n_(n), mask_((uint64_t(1) << bits) - 1), codes_(std::move(codes)) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    uint8_t* y = static_cast<uint8_t*>(outputs[0]);
    const int64_t n = n_;
    const uint64_t mask = mask_;
    const uint8_t* codes = codes_.data();
#pragma omp parallel for schedule(static) if (n > kParallelElems)
    for (int64_t i = 0; i < n; ++i) y[i] = codes[static_cast<uint64_t>(as_int64(x[i])) & mask];
  }

 private:
  int64_t n_;
  uint64_t mask_;
  std::vector<uint8_t> codes_;
};

std::unique_ptr<Kernel> make_sub_byte_int(const KernelSpec& spec) {
  if (spec.inputs.size() != 1) spec_error(spec, "takes one input");
  check_plain_pair(spec);
  if (dtype_size(spec.outputs[0].dtype) != 1) spec_error(spec, "y must have one byte per element");
  const int bits = static_cast<int>(spec.attrs.get_int("bits"));
  if (bits < 1 || bits > 8) spec_error(spec, "bits must be 1..8");
  const auto cv = spec.attrs.get_ints("codes");
  if (cv.size() != (size_t(1) << bits)) spec_error(spec, "codes must hold 2**bits entries");
  std::vector<uint8_t> codes(cv.begin(), cv.end());
  const int64_t n = spec.outputs[0].numel();
  switch (spec.inputs[0].dtype) {
    case DType::f32: return std::make_unique<SubByteIntKernel<float>>(n, bits, codes);
    case DType::f64: return std::make_unique<SubByteIntKernel<double>>(n, bits, codes);
    case DType::i8: return std::make_unique<SubByteIntKernel<int8_t>>(n, bits, codes);
    case DType::i16: return std::make_unique<SubByteIntKernel<int16_t>>(n, bits, codes);
    case DType::i32: return std::make_unique<SubByteIntKernel<int32_t>>(n, bits, codes);
    case DType::i64: return std::make_unique<SubByteIntKernel<int64_t>>(n, bits, codes);
    case DType::u8: return std::make_unique<SubByteIntKernel<uint8_t>>(n, bits, codes);
    case DType::u16: return std::make_unique<SubByteIntKernel<uint16_t>>(n, bits, codes);
    case DType::u32: return std::make_unique<SubByteIntKernel<uint32_t>>(n, bits, codes);
    case DType::u64: return std::make_unique<SubByteIntKernel<uint64_t>>(n, bits, codes);
    default: spec_error(spec, "x must be float32, float64 or an integer type");
  }
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("CastLookup", make_lookup);
GRAPHKILN_REGISTER_KERNEL("CastSteps", make_steps);
GRAPHKILN_REGISTER_KERNEL("CastSubByteInt", make_sub_byte_int);

}  // namespace graphkiln
