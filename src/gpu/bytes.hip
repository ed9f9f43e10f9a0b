// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Element-wise kernels the float register program cannot do exactly, with the contracts of
// their cpu twins (one lowering feeds both targets):
//   "CastLookup", "CastSteps", "CastSubByteInt" (src/cpu/cast_bytes.cpp): casts from and to
//     the one-byte types (float8, float4, int4, int2; u8 storage) through tables and break
//     points the lowering computes from the ref conversion;
//   "Bitwise" (attr op: and / or / xor / shl / shr; two inputs broadcast to the output) and
//     "BitwiseNot" (src/cpu/bitwise.cpp), exact in the integer type;
//   "QuantizeLinear" / "DequantizeLinear" (src/cpu/quantize.cpp): integer types, x seen as
//     [outer, axis_len, inner], the scale / zero point element of (o, a, i) at
//     o * param_outer + (a / block) * param_axis + i * param_inner.
// Tables and break points live in device memory uploaded when the plan is built.
#include "gpu/common.hpp"

#include <algorithm>
#include <cstdint>
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

void check_plain_pair(const KernelSpec& spec) {
  if (spec.outputs.size() != 1) spec_error(spec, "takes one output");
  const TensorInfo& x = spec.inputs.at(0);
  if (!x.is_contiguous() || !spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  if (x.dims != spec.outputs[0].dims) spec_error(spec, "x and y dims differ");
}

// A device copy of host bytes, freed with the kernel.
class DeviceBytes {
 public:
  DeviceBytes() = default;
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  ~DeviceBytes() {
    if (ptr_) (void)hipFree(ptr_);
  }
  void upload(const void* data, size_t bytes) {
    check(hipMalloc(&ptr_, bytes < 1 ? 1 : bytes), "allocating a kernel table");
    if (bytes)
      check(hipMemcpy(ptr_, data, bytes, hipMemcpyHostToDevice), "uploading a kernel table");
  }
  template <typename T>
  const T* get() const {
    return static_cast<const T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

// -- casts -------------------------------------------------------------------------------
template <typename I, typename E>
__global__ void lookup_kernel(const I* x, const E* table, E* y, int64_t n) {
  GK_GRID_LOOP(i, n) y[i] = table[x[i]];
}

class CastLookup : public Kernel {
 public:
  explicit CastLookup(const KernelSpec& spec) {
    if (spec.inputs.size() != 2 || !spec.has_input(1)) spec_error(spec, "takes x and a table");
    check_plain_pair(spec);
    ib_ = dtype_size(spec.inputs[0].dtype);
    eb_ = dtype_size(spec.outputs[0].dtype);
    if (ib_ != 1 && ib_ != 2) spec_error(spec, "x must have one or two bytes per element");
    const TensorInfo& table = spec.inputs[1];
    if (table.numel() != (ib_ == 1 ? 256 : 65536) || dtype_size(table.dtype) != eb_)
      spec_error(spec, "the table must hold 2**(8 * x's size) entries of y's size");
    if (eb_ != 1 && eb_ != 2 && eb_ != 4 && eb_ != 8) spec_error(spec, "bad entry size");
    n_ = spec.outputs[0].numel();
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    if (ib_ == 1) dispatch(static_cast<const uint8_t*>(inputs[0]), inputs[1], outputs[0], ctx);
    else dispatch(static_cast<const uint16_t*>(inputs[0]), inputs[1], outputs[0], ctx);
    check_launch("lookup_kernel");
  }

 private:
  template <typename I>
  void dispatch(const I* x, const void* table, void* y, Context& ctx) const {
    const unsigned blocks = blocks_for(n_, 256);
    switch (eb_) {
      case 1:
        lookup_kernel<<<blocks, 256, 0, ctx.stream>>>(x, static_cast<const uint8_t*>(table),
                                                      static_cast<uint8_t*>(y), n_);
        break;
      case 2:
        lookup_kernel<<<blocks, 256, 0, ctx.stream>>>(x, static_cast<const uint16_t*>(table),
                                                      static_cast<uint16_t*>(y), n_);
        break;
      case 4:
        lookup_kernel<<<blocks, 256, 0, ctx.stream>>>(x, static_cast<const uint32_t*>(table),
                                                      static_cast<uint32_t*>(y), n_);
        break;
      default:
        lookup_kernel<<<blocks, 256, 0, ctx.stream>>>(x, static_cast<const uint64_t*>(table),
                                                      static_cast<uint64_t*>(y), n_);
        break;
    }
  }
  size_t ib_ = 1, eb_ = 1;
  int64_t n_ = 0;
};

// breaks: [pos (np), neg (nn)]; codes: [pos (np + 1), neg (nn + 1)]
template <typename U>
__global__ void steps_kernel(const U* x, uint8_t* y, const U* breaks, const uint8_t* codes, int np,
                             int nn, U inf_bits, uint8_t nan_code, int64_t n) {
  constexpr U kSign = U(1) << (sizeof(U) * 8 - 1);
  GK_GRID_LOOP(i, n) {
    const U bits = x[i];
    const U mag = bits & ~kSign;
    if (mag > inf_bits) {
      y[i] = nan_code;
      continue;
    }
    const bool neg = (bits & kSign) != 0;
    const U* br = neg ? breaks + np : breaks;
    const uint8_t* cd = neg ? codes + np + 1 : codes;
    int lo = 0, hi = neg ? nn : np;  // first break > mag (upper bound)
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (br[mid] <= mag) lo = mid + 1;
      else hi = mid;
    }
    y[i] = cd[lo];
  }
}

class CastSteps : public Kernel {
 public:
  explicit CastSteps(const KernelSpec& spec) {
    if (spec.inputs.size() != 1) spec_error(spec, "takes one input");
    check_plain_pair(spec);
    if (dtype_size(spec.outputs[0].dtype) != 1)
      spec_error(spec, "y must have one byte per element");
    const auto pb = spec.attrs.get_ints("pos_breaks"), nb = spec.attrs.get_ints("neg_breaks");
    const auto pc = spec.attrs.get_ints("pos_codes"), nc = spec.attrs.get_ints("neg_codes");
    if (pc.size() != pb.size() + 1 || nc.size() != nb.size() + 1)
      spec_error(spec, "codes must hold one more entry than breaks");
    if (!std::is_sorted(pb.begin(), pb.end()) || !std::is_sorted(nb.begin(), nb.end()))
      spec_error(spec, "breaks must be sorted");
    nan_ = static_cast<uint8_t>(spec.attrs.get_int("nan_code"));
    np_ = static_cast<int>(pb.size());
    nn_ = static_cast<int>(nb.size());
    f64_ = spec.inputs[0].dtype == DType::f64;
    if (!f64_ && spec.inputs[0].dtype != DType::f32)
      spec_error(spec, "x must be float32 or float64");
    std::vector<uint8_t> codes;
    for (int64_t c : pc) codes.push_back(static_cast<uint8_t>(c));
    for (int64_t c : nc) codes.push_back(static_cast<uint8_t>(c));
    codes_.upload(codes.data(), codes.size());
    if (f64_) upload_breaks<uint64_t>(pb, nb);
    else upload_breaks<uint32_t>(pb, nb);
    n_ = spec.outputs[0].numel();
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    uint8_t* y = static_cast<uint8_t*>(outputs[0]);
    const unsigned blocks = blocks_for(n_, 256);
    if (f64_)
      steps_kernel<uint64_t><<<blocks, 256, 0, ctx.stream>>>(
          static_cast<const uint64_t*>(inputs[0]), y, breaks_.get<uint64_t>(),
          codes_.get<uint8_t>(), np_, nn_, 0x7FF0000000000000ull, nan_, n_);
    else
      steps_kernel<uint32_t><<<blocks, 256, 0, ctx.stream>>>(
          static_cast<const uint32_t*>(inputs[0]), y, breaks_.get<uint32_t>(),
          codes_.get<uint8_t>(), np_, nn_, 0x7F800000u, nan_, n_);
    check_launch("steps_kernel");
  }

 private:
  template <typename U>
  void upload_breaks(const std::vector<int64_t>& pb, const std::vector<int64_t>& nb) {
    std::vector<U> all;
    for (int64_t b : pb) all.push_back(static_cast<U>(static_cast<uint64_t>(b)));
    for (int64_t b : nb) all.push_back(static_cast<U>(static_cast<uint64_t>(b)));
    breaks_.upload(all.data(), all.size() * sizeof(U));
  }
  DeviceBytes breaks_, codes_;
  int np_ = 0, nn_ = 0;
  uint8_t nan_ = 0;
  bool f64_ = false;
  int64_t n_ = 0;
};

template <typename T>
__device__ inline int64_t as_int64(T v) {
  if constexpr (std::is_floating_point<T>::value) {
    if (!isfinite(v)) return 0;
    const T t = trunc(v);
    if (t >= T(9223372036854775808.0) || t < T(-9223372036854775808.0)) return INT64_MIN;
    return static_cast<int64_t>(t);
  } else {
    return static_cast<int64_t>(v);
  }
}

struct Codes16 {
  uint8_t c[256];
};

template <typename T>
__global__ void sub_byte_int_kernel(const T* x, uint8_t* y, Codes16 codes, uint64_t mask,
                                    int64_t n) {
  GK_GRID_LOOP(i, n) y[i] = codes.c[static_cast<uint64_t>(as_int64(x[i])) & mask];
}

class CastSubByteInt : public Kernel {
 public:
  explicit CastSubByteInt(const KernelSpec& spec) {
    if (spec.inputs.size() != 1) spec_error(spec, "takes one input");
    check_plain_pair(spec);
    if (dtype_size(spec.outputs[0].dtype) != 1)
      spec_error(spec, "y must have one byte per element");
    const int bits = static_cast<int>(spec.attrs.get_int("bits"));
    if (bits < 1 || bits > 8) spec_error(spec, "bits must be 1..8");
    const auto cv = spec.attrs.get_ints("codes");
    if (cv.size() != (size_t(1) << bits)) spec_error(spec, "codes must hold 2**bits entries");
    for (size_t i = 0; i < cv.size(); ++i) codes_.c[i] = static_cast<uint8_t>(cv[i]);
    mask_ = (uint64_t(1) << bits) - 1;
    dtype_ = spec.inputs[0].dtype;
    switch (dtype_) {
      case DType::f32:
      case DType::f64:
      case DType::i8:
      case DType::i16:
      case DType::i32:
      case DType::i64:
      case DType::u8:
      case DType::u16:
      case DType::u32:
      case DType::u64: break;
      default: spec_error(spec, "x must be float32, float64 or an integer type");
    }
    n_ = spec.outputs[0].numel();
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    uint8_t* y = static_cast<uint8_t*>(outputs[0]);
    switch (dtype_) {
      case DType::f32: go<float>(inputs[0], y, ctx); break;
      case DType::f64: go<double>(inputs[0], y, ctx); break;
      case DType::i8: go<int8_t>(inputs[0], y, ctx); break;
      case DType::i16: go<int16_t>(inputs[0], y, ctx); break;
      case DType::i32: go<int32_t>(inputs[0], y, ctx); break;
      case DType::i64: go<int64_t>(inputs[0], y, ctx); break;
      case DType::u8: go<uint8_t>(inputs[0], y, ctx); break;
      case DType::u16: go<uint16_t>(inputs[0], y, ctx); break;
      case DType::u32: go<uint32_t>(inputs[0], y, ctx); break;
      default: go<uint64_t>(inputs[0], y, ctx); break;
    }
    check_launch("sub_byte_int_kernel");
  }

 private:
  template <typename T>
  void go(const void* x, uint8_t* y, Context& ctx) const {
    sub_byte_int_kernel<T><<<blocks_for(n_, 256), 256, 0, ctx.stream>>>(static_cast<const T*>(x), y,
                                                                        codes_, mask_, n_);
  }
  Codes16 codes_{};
  uint64_t mask_ = 0;
  DType dtype_ = DType::f32;
  int64_t n_ = 0;
};

// -- bitwise -----------------------------------------------------------------------------
enum BitOp : int { kAnd, kOr, kXor, kShl, kShr, kNot };

template <typename T>
__device__ inline T shift(T x, T y, bool left) {
  constexpr int bits = sizeof(T) * 8;
  using U = typename std::make_unsigned<T>::type;
  bool negative = false;
  if constexpr (std::is_signed<T>::value) negative = y < 0;
  if (negative || static_cast<uint64_t>(y) >= static_cast<uint64_t>(bits)) {
    if constexpr (std::is_signed<T>::value) {
      if (!left && x < 0) return T(-1);
    }
    return T(0);
  }
  if (left) return static_cast<T>(static_cast<U>(x) << static_cast<int>(y));
  return static_cast<T>(x >> static_cast<int>(y));
}

template <typename T>
__global__ void bitwise_kernel(const T* a, const T* b, T* out, Strides ma, Strides mb, int op,
                               int64_t n) {
  GK_GRID_LOOP(i, n) {
    const T x = a[map_offset(ma, i)];
    T r;
    if (op == kNot) {
      r = static_cast<T>(~x);
    } else {
      const T y = b[map_offset(mb, i)];
      switch (op) {
        case kAnd: r = x & y; break;
        case kOr: r = x | y; break;
        case kXor: r = x ^ y; break;
        case kShl: r = shift<T>(x, y, true); break;
        default: r = shift<T>(x, y, false); break;
      }
    }
    out[i] = r;
  }
}

// right-aligned numpy broadcast of a plain input to the output: one index map
Strides broadcast_map(const KernelSpec& spec, const TensorInfo& in, const TensorInfo& out) {
  if (in.rank() > out.rank()) spec_error(spec, "an input has a higher rank than the output");
  if (!in.is_contiguous()) spec_error(spec, "plain inputs only");
  const int shift_axes = out.rank() - in.rank();
  std::vector<int64_t> dims, strides;
  for (int d = 0; d < out.rank(); ++d) {
    const int src = d - shift_axes;
    if (src >= 0 && in.dims[src] != 1 && in.dims[src] != out.dims[d])
      spec_error(spec, "an input does not broadcast to the output");
    const int64_t stride = (src < 0 || in.dims[src] == 1) ? 0 : in.strides[src];
    if (out.dims[d] == 1) continue;
    if (!dims.empty() && strides.back() == stride * out.dims[d]) {
      dims.back() *= out.dims[d];
      strides.back() = stride;
    } else {
      dims.push_back(out.dims[d]);
      strides.push_back(stride);
    }
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) spec_error(spec, "rank above 8");
  Strides m;
  m.rank = static_cast<int>(dims.size());
  for (int d = 0; d < m.rank; ++d) {
    m.dims[d] = dims[d];
    m.strides[d] = strides[d];
  }
  return m;
}

class Bitwise : public Kernel {
 public:
  Bitwise(const KernelSpec& spec, bool is_not) {
    const TensorInfo& out = spec.outputs.at(0);
    if (!out.is_contiguous()) spec_error(spec, "plain output only");
    dtype_ = out.dtype;
    const size_t n_in = is_not ? 1 : 2;
    if (spec.inputs.size() != n_in) spec_error(spec, "wrong number of inputs");
    for (size_t k = 0; k < n_in; ++k)
      if (spec.inputs[k].dtype != dtype_) spec_error(spec, "operands must share one dtype");
    if (is_not) {
      op_ = kNot;
    } else {
      const std::string op = spec.attrs.get_str("op");
      if (op == "and") op_ = kAnd;
      else if (op == "or") op_ = kOr;
      else if (op == "xor") op_ = kXor;
      else if (op == "shl") op_ = kShl;
      else if (op == "shr") op_ = kShr;
      else spec_error(spec, "unknown op " + op);
    }
    ma_ = broadcast_map(spec, spec.inputs[0], out);
    if (!is_not) mb_ = broadcast_map(spec, spec.inputs[1], out);
    n_ = out.numel();
    switch (dtype_) {
      case DType::i8:
      case DType::i16:
      case DType::i32:
      case DType::i64:
      case DType::u8:
      case DType::u16:
      case DType::u32:
      case DType::u64: break;
      default: spec_error(spec, "integer operands only");
    }
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    const void* b = op_ == kNot ? inputs[0] : inputs[1];
    switch (dtype_) {
      case DType::i8: go<int8_t>(inputs[0], b, outputs[0], ctx); break;
      case DType::i16: go<int16_t>(inputs[0], b, outputs[0], ctx); break;
      case DType::i32: go<int32_t>(inputs[0], b, outputs[0], ctx); break;
      case DType::i64: go<int64_t>(inputs[0], b, outputs[0], ctx); break;
      case DType::u8: go<uint8_t>(inputs[0], b, outputs[0], ctx); break;
      case DType::u16: go<uint16_t>(inputs[0], b, outputs[0], ctx); break;
      case DType::u32: go<uint32_t>(inputs[0], b, outputs[0], ctx); break;
      default: go<uint64_t>(inputs[0], b, outputs[0], ctx); break;
    }
    check_launch("bitwise_kernel");
  }

 private:
  template <typename T>
  void go(const void* a, const void* b, void* out, Context& ctx) const {
    bitwise_kernel<T><<<blocks_for(n_, 256), 256, 0, ctx.stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), ma_, mb_, op_,
        n_);
  }
  Strides ma_, mb_;
  int op_ = kAnd;
  DType dtype_ = DType::i32;
  int64_t n_ = 0;
};

// -- quantize ----------------------------------------------------------------------------
struct ParamMap {
  int64_t outer = 1, axis_len = 1, inner = 1, block = 1, p_outer = 0, p_axis = 0, p_inner = 0;
};

ParamMap param_map(const KernelSpec& spec) {
  ParamMap m;
  m.outer = spec.attrs.get_int("outer");
  m.axis_len = spec.attrs.get_int("axis_len");
  m.inner = spec.attrs.get_int("inner");
  m.block = std::max<int64_t>(1, spec.attrs.get_int("block", 1));
  m.p_outer = spec.attrs.get_int("param_outer");
  m.p_axis = spec.attrs.get_int("param_axis");
  m.p_inner = spec.attrs.get_int("param_inner");
  if (m.outer * m.axis_len * m.inner != spec.inputs.at(0).numel())
    spec_error(spec, "outer * axis_len * inner != numel");
  const int64_t last = (m.outer - 1) * m.p_outer + ((m.axis_len - 1) / m.block) * m.p_axis +
                       (m.inner - 1) * m.p_inner;
  if (m.outer * m.axis_len * m.inner > 0 && last >= spec.inputs.at(1).numel())
    spec_error(spec, "the scale is too small for the parameter map");
  if (!spec.inputs[0].is_contiguous() || !spec.outputs.at(0).is_contiguous())
    spec_error(spec, "plain data only");
  return m;
}

__device__ inline int64_t param_index(const ParamMap& m, int64_t i) {
  const int64_t in = i % m.inner, r = i / m.inner;
  const int64_t a = r % m.axis_len, o = r / m.axis_len;
  return o * m.p_outer + (a / m.block) * m.p_axis + in * m.p_inner;
}

__device__ inline double read_int(int dt, const void* p, int64_t i) {
  switch (static_cast<DType>(dt)) {
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    case DType::u8: return static_cast<const uint8_t*>(p)[i];
    case DType::i16: return static_cast<const int16_t*>(p)[i];
    case DType::u16: return static_cast<const uint16_t*>(p)[i];
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::u32: return static_cast<const uint32_t*>(p)[i];
    default: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
  }
}

template <typename Q>
__global__ void quantize_kernel(const float* x, const float* scale, const void* zp, int zp_dtype,
                                Q* y, ParamMap m, double lo, double hi, int64_t n) {
  GK_GRID_LOOP(i, n) {
    const int64_t p = param_index(m, i);
    const float q = x[i] / scale[p];
    double v = rint(static_cast<double>(q));
    if (zp) v += read_int(zp_dtype, zp, p);
    v = fmin(fmax(v, lo), hi);
    y[i] = v == v ? static_cast<Q>(v) : Q(0);
  }
}

template <typename Q>
__global__ void dequantize_kernel(const Q* x, const float* scale, const void* zp, int zp_dtype,
                                  float* y, ParamMap m, int64_t n) {
  GK_GRID_LOOP(i, n) {
    const int64_t p = param_index(m, i);
    double v = static_cast<double>(x[i]);
    if (zp) v -= read_int(zp_dtype, zp, p);
    y[i] = static_cast<float>(v * static_cast<double>(scale[p]));
  }
}

class Quantize : public Kernel {
 public:
  Quantize(const KernelSpec& spec, bool quantize) : quantize_(quantize) {
    map_ = param_map(spec);
    has_zp_ = spec.has_input(2);
    if (has_zp_) zp_dtype_ = static_cast<int>(spec.inputs[2].dtype);
    q_ = quantize ? spec.outputs[0].dtype : spec.inputs[0].dtype;
    const DType f = quantize ? spec.inputs[0].dtype : spec.outputs[0].dtype;
    if (f != DType::f32 || spec.inputs[1].dtype != DType::f32)
      spec_error(spec, "float32 x / y and scale only");
    switch (q_) {
      case DType::i8:
      case DType::u8:
      case DType::i16:
      case DType::u16:
      case DType::i32:
      case DType::u32: break;
      default: spec_error(spec, "integer quantized types only");
    }
    n_ = spec.inputs[0].numel();
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    switch (q_) {
      case DType::i8: go<int8_t>(inputs, outputs, ctx, -128.0, 127.0); break;
      case DType::u8: go<uint8_t>(inputs, outputs, ctx, 0.0, 255.0); break;
      case DType::i16: go<int16_t>(inputs, outputs, ctx, -32768.0, 32767.0); break;
      case DType::u16: go<uint16_t>(inputs, outputs, ctx, 0.0, 65535.0); break;
      case DType::i32: go<int32_t>(inputs, outputs, ctx, -2147483648.0, 2147483647.0); break;
      default: go<uint32_t>(inputs, outputs, ctx, 0.0, 4294967295.0); break;
    }
    check_launch(quantize_ ? "quantize_kernel" : "dequantize_kernel");
  }

 private:
  template <typename Q>
  void go(const void* const* inputs, void* const* outputs, Context& ctx, double lo,
          double hi) const {
    const void* zp = has_zp_ ? inputs[2] : nullptr;
    const float* scale = static_cast<const float*>(inputs[1]);
    const unsigned blocks = blocks_for(n_, 256);
    if (quantize_)
      quantize_kernel<Q><<<blocks, 256, 0, ctx.stream>>>(
          static_cast<const float*>(inputs[0]), scale, zp, zp_dtype_, static_cast<Q*>(outputs[0]),
          map_, lo, hi, n_);
    else
      dequantize_kernel<Q>
          <<<blocks, 256, 0, ctx.stream>>>(static_cast<const Q*>(inputs[0]), scale, zp, zp_dtype_,
                                           static_cast<float*>(outputs[0]), map_, n_);
  }
  ParamMap map_;
  bool quantize_ = true, has_zp_ = false;
  int zp_dtype_ = 0;
  DType q_ = DType::u8;
  int64_t n_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_cast_lookup(const KernelSpec& spec) {
  return std::make_unique<CastLookup>(spec);
}
std::unique_ptr<Kernel> make_cast_steps(const KernelSpec& spec) {
  return std::make_unique<CastSteps>(spec);
}
std::unique_ptr<Kernel> make_cast_sub_byte_int(const KernelSpec& spec) {
  return std::make_unique<CastSubByteInt>(spec);
}
std::unique_ptr<Kernel> make_bitwise(const KernelSpec& spec) {
  return std::make_unique<Bitwise>(spec, false);
}
std::unique_ptr<Kernel> make_bitwise_not(const KernelSpec& spec) {
  return std::make_unique<Bitwise>(spec, true);
}
std::unique_ptr<Kernel> make_quantize(const KernelSpec& spec) {
  return std::make_unique<Quantize>(spec, true);
}
std::unique_ptr<Kernel> make_dequantize(const KernelSpec& spec) {
  return std::make_unique<Quantize>(spec, false);
}

}  // namespace gpu
}  // namespace graphkiln
