// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "QuantizeLinear" / "DequantizeLinear" with integer quantized types (i8, u8, i16, u16,
// i32, u32), per tensor, per axis or blocked, on plain data; and "DynamicQuantizeLinear".
//
// x is viewed as [outer, axis_len, inner]; the scale (and zero point) element of x's element
// (o, a, i) is  o * param_outer + (a / block) * param_axis + i * param_inner  (strides 0
// for what the parameter does not vary along). Attrs: outer, axis_len, inner, block,
// param_outer, param_axis, param_inner (the lowering computes them).
// QuantizeLinear: y = clip(rint(float(x / scale)) + zero_point) (x, scale: float32).
// DequantizeLinear: y = float((x - zero_point) * scale), computed in double (scale float32).
// DynamicQuantizeLinear (float32 x): uint8 y, float32 scale, uint8 zero point, as ONNX.
// "QuantizeLinearBytes" / "DequantizeLinearBytes": the same with a one-byte quantized type
// the core sees as u8 (float8, float4e2m1, int4, uint4, int2, uint2; see cast_bytes.cpp),
// from tables the lowering computes with ref: Dequantize input 3 = float64 value of each
// byte; Quantize input 3 = float32 value of each zero-point byte, then either
// mode "int" (lo, hi, codes[v - lo] = byte of integer v) or mode "float" (the float32
// step function pos_breaks / pos_codes / neg_breaks / neg_codes / nan_code of |x|'s bits).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/bit_cast.hpp"
#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelElems = 1 << 15;

struct ParamMap {
  int64_t outer = 1, axis_len = 1, inner = 1, block = 1;
  int64_t p_outer = 0, p_axis = 0, p_inner = 0;

  explicit ParamMap(const KernelSpec& spec) {
    outer = spec.attrs.get_int("outer");
    axis_len = spec.attrs.get_int("axis_len");
    inner = spec.attrs.get_int("inner");
    block = std::max<int64_t>(1, spec.attrs.get_int("block", 1));
    p_outer = spec.attrs.get_int("param_outer");
    p_axis = spec.attrs.get_int("param_axis");
    p_inner = spec.attrs.get_int("param_inner");
    if (outer * axis_len * inner != spec.inputs[0].numel())
      spec_error(spec, "outer * axis_len * inner != numel");
    const int64_t last =
        (outer - 1) * p_outer + ((axis_len - 1) / block) * p_axis + (inner - 1) * p_inner;
    if (outer * axis_len * inner > 0 && last >= spec.inputs[1].numel())
      spec_error(spec, "the scale is too small for the parameter map");
  }
};

int64_t read_int(DType dt, const void* p, int64_t i) {
  switch (dt) {
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    case DType::u8: return static_cast<const uint8_t*>(p)[i];
    case DType::i16: return static_cast<const int16_t*>(p)[i];
    case DType::u16: return static_cast<const uint16_t*>(p)[i];
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::u32: return static_cast<const uint32_t*>(p)[i];
    default: return static_cast<const int64_t*>(p)[i];
  }
}

bool quant_int(DType dt) {
  switch (dt) {
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::i32:
    case DType::u32: return true;
    default: return false;
  }
}

template <typename Q>
class QuantizeKernel : public Kernel {
 public:
  QuantizeKernel(const KernelSpec& spec, ParamMap map) : map_(map), zp_dtype_(DType::u8) {
    has_zp_ = spec.has_input(2);
    if (has_zp_) zp_dtype_ = spec.inputs[2].dtype;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const void* zp = has_zp_ ? inputs[2] : nullptr;
    Q* y = static_cast<Q*>(outputs[0]);
    const double lo = static_cast<double>(std::numeric_limits<Q>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<Q>::max());
    const ParamMap m = map_;
    const int64_t rows = m.outer * m.axis_len;
#pragma omp parallel for schedule(static) if (rows * m.inner > kParallelElems)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r / m.axis_len, a = r % m.axis_len;
      const int64_t base = o * m.p_outer + (a / m.block) * m.p_axis;
      const float* xr = x + r * m.inner;
      Q* yr = y + r * m.inner;
      for (int64_t i = 0; i < m.inner; ++i) {
        const int64_t p = base + i * m.p_inner;
        const float q = xr[i] / scale[p];
        double v = std::nearbyint(static_cast<double>(q));
        if (zp) v += static_cast<double>(read_int(zp_dtype_, zp, p));
        v = std::min(std::max(v, lo), hi);
        yr[i] = v == v ? static_cast<Q>(v) : Q(0);
      }
    }
  }

 private:
  ParamMap map_;
  bool has_zp_ = false;
  DType zp_dtype_;
};

template <typename Q>
class DequantizeKernel : public Kernel {
 public:
  DequantizeKernel(const KernelSpec& spec, ParamMap map) : map_(map), zp_dtype_(DType::u8) {
    has_zp_ = spec.has_input(2);
    if (has_zp_) zp_dtype_ = spec.inputs[2].dtype;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const Q* x = static_cast<const Q*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const void* zp = has_zp_ ? inputs[2] : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    const ParamMap m = map_;
    const int64_t rows = m.outer * m.axis_len;
#pragma omp parallel for schedule(static) if (rows * m.inner > kParallelElems)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r / m.axis_len, a = r % m.axis_len;
      const int64_t base = o * m.p_outer + (a / m.block) * m.p_axis;
      const Q* xr = x + r * m.inner;
      float* yr = y + r * m.inner;
      for (int64_t i = 0; i < m.inner; ++i) {
        const int64_t p = base + i * m.p_inner;
        double v = static_cast<double>(xr[i]);
        if (zp) v -= static_cast<double>(read_int(zp_dtype_, zp, p));
        yr[i] = static_cast<float>(v * static_cast<double>(scale[p]));
      }
    }
  }

 private:
  ParamMap map_;
  bool has_zp_ = false;
  DType zp_dtype_;
};

void check_common(const KernelSpec& spec, DType float_side) {
  if (spec.inputs.size() < 2 || spec.inputs.size() > 3 || spec.outputs.size() != 1)
    spec_error(spec, "takes x, scale, zero_point? and one output");
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.has_input(i) && !spec.inputs[i].is_contiguous()) spec_error(spec, "plain data only");
  if (!spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  if (spec.inputs[1].dtype != DType::f32) spec_error(spec, "the scale must be float32");
  if (float_side != DType::f32) spec_error(spec, "the float side must be float32");
  if (spec.inputs[0].dims != spec.outputs[0].dims) spec_error(spec, "x and y dims differ");
}

std::unique_ptr<Kernel> make_quantize(const KernelSpec& spec) {
  check_common(spec, spec.inputs[0].dtype);
  const DType q = spec.outputs[0].dtype;
  if (spec.has_input(2) && spec.inputs[2].dtype != q)
    spec_error(spec, "zero point and y dtypes differ");
  ParamMap map(spec);
  switch (q) {
    case DType::i8: return std::make_unique<QuantizeKernel<int8_t>>(spec, map);
    case DType::u8: return std::make_unique<QuantizeKernel<uint8_t>>(spec, map);
    case DType::i16: return std::make_unique<QuantizeKernel<int16_t>>(spec, map);
    case DType::u16: return std::make_unique<QuantizeKernel<uint16_t>>(spec, map);
    case DType::i32: return std::make_unique<QuantizeKernel<int32_t>>(spec, map);
    case DType::u32: return std::make_unique<QuantizeKernel<uint32_t>>(spec, map);
    default: spec_error(spec, "y must be i8, u8, i16, u16, i32 or u32");
  }
}

std::unique_ptr<Kernel> make_dequantize(const KernelSpec& spec) {
  check_common(spec, spec.outputs[0].dtype);
  const DType q = spec.inputs[0].dtype;
  if (!quant_int(q)) spec_error(spec, "x must be i8, u8, i16, u16, i32 or u32");
  if (spec.has_input(2) && spec.inputs[2].dtype != q)
    spec_error(spec, "zero point and x dtypes differ");
  ParamMap map(spec);
  switch (q) {
    case DType::i8: return std::make_unique<DequantizeKernel<int8_t>>(spec, map);
    case DType::u8: return std::make_unique<DequantizeKernel<uint8_t>>(spec, map);
    case DType::i16: return std::make_unique<DequantizeKernel<int16_t>>(spec, map);
    case DType::u16: return std::make_unique<DequantizeKernel<uint16_t>>(spec, map);
    case DType::i32: return std::make_unique<DequantizeKernel<int32_t>>(spec, map);
    default: return std::make_unique<DequantizeKernel<uint32_t>>(spec, map);
  }
}

// The smallest and largest of x[0, n) and 0, in 16 lanes so that it vectorizes (a NaN
// compares false and is skipped, as the scalar loop did).
__attribute__((target_clones("avx512f", "avx2", "default"))) void range_with_zero(const float* x,
                                                                                  int64_t n,
                                                                                  float* low,
                                                                                  float* high) {
  float lo[16] = {}, hi[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) {
      lo[j] = x[i + j] < lo[j] ? x[i + j] : lo[j];
      hi[j] = x[i + j] > hi[j] ? x[i + j] : hi[j];
    }
  for (; i < n; ++i) {
    lo[0] = x[i] < lo[0] ? x[i] : lo[0];
    hi[0] = x[i] > hi[0] ? x[i] : hi[0];
  }
  float l = 0.0f, h = 0.0f;
  for (int j = 0; j < 16; ++j) {
    l = lo[j] < l ? lo[j] : l;
    h = hi[j] > h ? hi[j] : h;
  }
  *low = l;
  *high = h;
}

// y = saturate(round_half_even(x / scale) + zero_point) to uint8 (rint: the current
// rounding mode, to nearest even; a builtin, so it vectorizes)
__attribute__((target_clones("avx512f", "avx2", "default"))) void quantize_u8(
    const float* x, int64_t n, float scale, float zero_point, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    float v = __builtin_rintf(x[i] / scale) + zero_point;
    v = v < 0.0f ? 0.0f : v;
    v = v > 255.0f ? 255.0f : v;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
  }
}

class DynamicQuantizeKernel : public Kernel {
 public:
  explicit DynamicQuantizeKernel(int64_t n) : n_(n) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    uint8_t* y = static_cast<uint8_t*>(outputs[0]);
    float* scale_out = static_cast<float*>(outputs[1]);
    uint8_t* zp_out = static_cast<uint8_t*>(outputs[2]);
    const int64_t n = n_;
    float low = 0.0f, high = 0.0f;
#pragma omp parallel reduction(min : low) reduction(max : high) if (n > kParallelElems)
    {
      const int threads = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t begin = n * t / threads, end = n * (t + 1) / threads;
      float l = 0.0f, h = 0.0f;
      range_with_zero(x + begin, end - begin, &l, &h);
      low = std::min(low, l);
      high = std::max(high, h);
    }
    const float scale = (high - low) / 255.0f;
    *scale_out = scale;
    if (scale == 0.0f) {
      *zp_out = 0;
      std::fill(y, y + n, uint8_t(0));
      return;
    }
    const float zf = std::min(std::max(std::nearbyint(0.0f - low / scale), 0.0f), 255.0f);
    const uint8_t zp = static_cast<uint8_t>(zf);
    *zp_out = zp;
#pragma omp parallel if (n > kParallelElems)
    {
      const int threads = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t begin = n * t / threads, end = n * (t + 1) / threads;
      quantize_u8(x + begin, end - begin, scale, static_cast<float>(zp), y + begin);
    }
  }

 private:
  int64_t n_;
};

std::unique_ptr<Kernel> make_dynamic_quantize(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 3)
    spec_error(spec, "takes x -> y, scale, zero point");
  const TensorInfo& x = spec.inputs[0];
  if (x.dtype != DType::f32 || !x.is_contiguous()) spec_error(spec, "x must be plain float32");
  if (spec.outputs[0].dtype != DType::u8 || spec.outputs[1].dtype != DType::f32 ||
      spec.outputs[2].dtype != DType::u8 || spec.outputs[1].numel() != 1 ||
      spec.outputs[2].numel() != 1)
    spec_error(spec, "outputs must be uint8 y, float32 scale, uint8 zero point");
  if (!spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  return std::make_unique<DynamicQuantizeKernel>(x.numel());
}

class DequantizeBytesKernel : public Kernel {
 public:
  DequantizeBytesKernel(const KernelSpec& spec, ParamMap map)
      : map_(map), has_zp_(spec.has_input(2)) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const uint8_t* x = static_cast<const uint8_t*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const uint8_t* zp = has_zp_ ? static_cast<const uint8_t*>(inputs[2]) : nullptr;
    const double* table = static_cast<const double*>(inputs[3]);
    float* y = static_cast<float*>(outputs[0]);
    const ParamMap m = map_;
    const int64_t rows = m.outer * m.axis_len;
#pragma omp parallel for schedule(static) if (rows * m.inner > kParallelElems)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r / m.axis_len, a = r % m.axis_len;
      const int64_t base = o * m.p_outer + (a / m.block) * m.p_axis;
      for (int64_t i = 0; i < m.inner; ++i) {
        const int64_t p = base + i * m.p_inner;
        double v = table[x[r * m.inner + i]];
        if (zp) v -= table[zp[p]];
        y[r * m.inner + i] = static_cast<float>(v * static_cast<double>(scale[p]));
      }
    }
  }

 private:
  ParamMap map_;
  bool has_zp_;
};

class QuantizeBytesKernel : public Kernel {
 public:
  QuantizeBytesKernel(const KernelSpec& spec, ParamMap map)
      : map_(map), has_zp_(spec.has_input(2)) {
    const Attrs& a = spec.attrs;
    float_mode_ = a.get_str("mode") == "float";
    if (float_mode_) {
      for (int64_t b : a.get_ints("pos_breaks")) pb_.push_back(static_cast<uint32_t>(b));
      for (int64_t b : a.get_ints("neg_breaks")) nb_.push_back(static_cast<uint32_t>(b));
      for (int64_t c : a.get_ints("pos_codes")) pc_.push_back(static_cast<uint8_t>(c));
      for (int64_t c : a.get_ints("neg_codes")) nc_.push_back(static_cast<uint8_t>(c));
      nan_ = static_cast<uint8_t>(a.get_int("nan_code"));
      if (pc_.size() != pb_.size() + 1 || nc_.size() != nb_.size() + 1)
        spec_error(spec, "codes must hold one more entry than breaks");
    } else {
      lo_ = a.get_int("lo");
      hi_ = a.get_int("hi");
      for (int64_t c : a.get_ints("codes")) codes_.push_back(static_cast<uint8_t>(c));
      if (hi_ < lo_ || codes_.size() != static_cast<size_t>(hi_ - lo_ + 1))
        spec_error(spec, "codes must hold hi - lo + 1 entries");
    }
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const uint8_t* zp = has_zp_ ? static_cast<const uint8_t*>(inputs[2]) : nullptr;
    const float* zp_value = static_cast<const float*>(inputs[3]);
    uint8_t* y = static_cast<uint8_t*>(outputs[0]);
    const ParamMap m = map_;
    const int64_t rows = m.outer * m.axis_len;
#pragma omp parallel for schedule(static) if (rows * m.inner > kParallelElems)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r / m.axis_len, a = r % m.axis_len;
      const int64_t base = o * m.p_outer + (a / m.block) * m.p_axis;
      for (int64_t i = 0; i < m.inner; ++i) {
        const int64_t p = base + i * m.p_inner;
        const float q = x[r * m.inner + i] / scale[p];
        y[r * m.inner + i] = float_mode_ ? to_float(zp ? q + zp_value[zp[p]] : q)
                                         : to_int(q, zp ? zp_value[zp[p]] : 0.0f);
      }
    }
  }

 private:
  uint8_t to_float(float v) const {
    const uint32_t bits = bit_as<uint32_t>(v);
    const uint32_t mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) return nan_;
    const bool neg = (bits >> 31) != 0;
    const std::vector<uint32_t>& br = neg ? nb_ : pb_;
    const size_t k = static_cast<size_t>(std::upper_bound(br.begin(), br.end(), mag) - br.begin());
    return neg ? nc_[k] : pc_[k];
  }
  uint8_t to_int(float q, float zero) const {
    double v = std::nearbyint(static_cast<double>(q)) + static_cast<double>(zero);
    v = std::min(std::max(v, static_cast<double>(lo_)), static_cast<double>(hi_));
    if (!(v == v)) v = 0.0;  // NaN: as numpy's cast of NaN to int (0 low bits)
    return codes_[static_cast<int64_t>(v) - lo_];
  }

  ParamMap map_;
  bool has_zp_;
  bool float_mode_ = false;
  std::vector<uint32_t> pb_, nb_;
  std::vector<uint8_t> pc_, nc_, codes_;
  uint8_t nan_ = 0;
  int64_t lo_ = 0, hi_ = 0;
};

void check_bytes(const KernelSpec& spec, size_t table_size, DType table_dtype) {
  if (spec.inputs.size() != 4 || !spec.has_input(3))
    spec_error(spec, "takes x, scale, zero_point?, table");
  if (spec.inputs[3].numel() != static_cast<int64_t>(table_size) ||
      spec.inputs[3].dtype != table_dtype)
    spec_error(spec, "bad table");
  for (size_t i = 0; i < 3; ++i)
    if (spec.has_input(i) && !spec.inputs[i].is_contiguous()) spec_error(spec, "plain data only");
  if (!spec.outputs[0].is_contiguous()) spec_error(spec, "plain data only");
  if (spec.inputs[1].dtype != DType::f32) spec_error(spec, "the scale must be float32");
  if (spec.inputs[0].dims != spec.outputs[0].dims) spec_error(spec, "x and y dims differ");
}

std::unique_ptr<Kernel> make_dequantize_bytes(const KernelSpec& spec) {
  check_bytes(spec, 256, DType::f64);
  if (dtype_size(spec.inputs[0].dtype) != 1 || spec.outputs[0].dtype != DType::f32)
    spec_error(spec, "x must be one byte per element, y float32");
  return std::make_unique<DequantizeBytesKernel>(spec, ParamMap(spec));
}

std::unique_ptr<Kernel> make_quantize_bytes(const KernelSpec& spec) {
  check_bytes(spec, 256, DType::f32);
  if (spec.inputs[0].dtype != DType::f32 || dtype_size(spec.outputs[0].dtype) != 1)
    spec_error(spec, "x must be float32, y one byte per element");
  return std::make_unique<QuantizeBytesKernel>(spec, ParamMap(spec));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("QuantizeLinearBytes", make_quantize_bytes);
GRAPHKILN_REGISTER_KERNEL("DequantizeLinearBytes", make_dequantize_bytes);
GRAPHKILN_REGISTER_KERNEL("QuantizeLinear", make_quantize);
GRAPHKILN_REGISTER_KERNEL("DequantizeLinear", make_dequantize);
GRAPHKILN_REGISTER_KERNEL("DynamicQuantizeLinear", make_dynamic_quantize);

}  // namespace graphkiln
