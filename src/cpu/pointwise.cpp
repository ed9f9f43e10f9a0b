// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Pointwise": runs a register program (pointwise_program.hpp) over a broadcast of its
// inputs to the output's dims, walking the output in its physical order (plain or
// channels-last) in tiles of consecutive elements.
//
// attrs: program (5 ints per instruction: op, dst, a, b, c), params (2 floats per
// instruction), num_regs, result (register of the output), compute ("f32" or "f64").
// Registers 0..num_inputs-1 hold the inputs.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

// FP exceptions are never inspected: let the vectorizer if-convert float selects.
#pragma GCC optimize("no-trapping-math")
#include "core/bit_cast.hpp"
#include "core/half_float.hpp"
#include "core/kernel.hpp"
#include "cpu/pointwise_program.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kTile = 512;
constexpr int64_t kParallelElems = 16384;

template <typename T, typename S>
inline void load_as(const S* src, int64_t stride, int64_t n, T* dst) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
  } else if (stride == 0) {
    T v = static_cast<T>(src[0]);
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i * stride]);
  }
}

template <typename T>
void load(DType dtype, const void* src, int64_t stride, int64_t n, T* dst) {
  switch (dtype) {
    case DType::f32: return load_as(static_cast<const float*>(src), stride, n, dst);
    case DType::f64: return load_as(static_cast<const double*>(src), stride, n, dst);
    case DType::f16: return load_as(static_cast<const Half*>(src), stride, n, dst);
    case DType::bf16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<T>(bit_as<float>(uint32_t(s[i * stride]) << 16));
      return;
    }
    case DType::i8: return load_as(static_cast<const int8_t*>(src), stride, n, dst);
    case DType::i16: return load_as(static_cast<const int16_t*>(src), stride, n, dst);
    case DType::i32: return load_as(static_cast<const int32_t*>(src), stride, n, dst);
    case DType::i64: return load_as(static_cast<const int64_t*>(src), stride, n, dst);
    case DType::u8:
    case DType::boolean: return load_as(static_cast<const uint8_t*>(src), stride, n, dst);
    case DType::u16: return load_as(static_cast<const uint16_t*>(src), stride, n, dst);
    case DType::u32: return load_as(static_cast<const uint32_t*>(src), stride, n, dst);
    case DType::u64: return load_as(static_cast<const uint64_t*>(src), stride, n, dst);
  }
}

template <typename D, typename T>
inline void store_as(const T* src, int64_t n, D* dst, int64_t stride) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i * stride] = static_cast<D>(src[i]);
  }
}

// Integers go through int64 (the program already truncated and wrapped them), or int32 for
// types of 16 bits or less, whose values int32 holds: that conversion vectorizes.
template <typename D, typename T>
inline void store_int(const T* src, int64_t n, D* dst, int64_t stride) {
  if constexpr (sizeof(D) <= 2) {
    if (stride == 1) {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(static_cast<int32_t>(src[i]));
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) dst[i * stride] = static_cast<D>(static_cast<int64_t>(src[i]));
}

template <typename T>
void store(DType dtype, const T* src, int64_t n, void* dst, int64_t stride) {
  switch (dtype) {
    case DType::f32: return store_as(src, n, static_cast<float*>(dst), stride);
    case DType::f64: return store_as(src, n, static_cast<double*>(dst), stride);
    case DType::f16: return store_as(src, n, static_cast<Half*>(dst), stride);
    case DType::bf16: {
      uint16_t* o = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t u = bit_as<uint32_t>(static_cast<float>(src[i]));
        if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x00400000u;
        else u = u + 0x7fffu + ((u >> 16) & 1u);
        o[i * stride] = static_cast<uint16_t>(u >> 16);
      }
      return;
    }
    case DType::i8: return store_int(src, n, static_cast<int8_t*>(dst), stride);
    case DType::i16: return store_int(src, n, static_cast<int16_t*>(dst), stride);
    case DType::i32: return store_int(src, n, static_cast<int32_t*>(dst), stride);
    case DType::i64: return store_int(src, n, static_cast<int64_t*>(dst), stride);
    case DType::u8: return store_int(src, n, static_cast<uint8_t*>(dst), stride);
    case DType::u16: return store_int(src, n, static_cast<uint16_t*>(dst), stride);
    case DType::u32: return store_int(src, n, static_cast<uint32_t*>(dst), stride);
    case DType::u64: return store_int(src, n, static_cast<uint64_t*>(dst), stride);
    case DType::boolean: {
      uint8_t* o = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) o[i * stride] = src[i] != 0 ? 1 : 0;
      return;
    }
  }
}

template <typename T>
void eval(const std::vector<PwInstr>& prog, T* const* regs, int64_t n);
template <>
void eval<float>(const std::vector<PwInstr>& prog, float* const* regs, int64_t n) {
  pw_eval_f32(prog.data(), static_cast<int>(prog.size()), regs, n);
}
template <>
void eval<double>(const std::vector<PwInstr>& prog, double* const* regs, int64_t n) {
  pw_eval_f64(prog.data(), static_cast<int>(prog.size()), regs, n);
}

template <typename T>
class PointwiseKernel : public Kernel {
 public:
  PointwiseKernel(const KernelSpec& spec, std::vector<PwInstr> prog, int num_regs, int result)
      : prog_(std::move(prog)), num_regs_(num_regs), result_(result) {
    const TensorInfo& out = spec.outputs[0];
    const int rank = out.rank();
    const size_t nin = spec.inputs.size();
    in_dtypes_.resize(nin);
    // operand strides aligned to the output dims (operand 0 = output)
    std::vector<std::vector<int64_t>> st(nin + 1, std::vector<int64_t>(rank, 0));
    st[0] = out.strides;
    for (size_t i = 0; i < nin; ++i) {
      const TensorInfo& t = spec.inputs[i];
      in_dtypes_[i] = t.dtype;
      if (t.rank() > rank) spec_error(spec, "an input has a higher rank than the output");
      const int shift = rank - t.rank();
      for (int j = 0; j < t.rank(); ++j) {
        int64_t d = t.dims[j], od = out.dims[j + shift];
        if (d == od) st[i + 1][j + shift] = d == 1 ? 0 : t.strides[j];
        else if (d == 1) st[i + 1][j + shift] = 0;
        else spec_error(spec, "input " + std::to_string(i) + " does not broadcast to the output");
      }
    }
    out_dtype_ = out.dtype;
    total_ = out.numel();
    // physical order: axes of the output by decreasing stride, size-1 axes dropped
    std::vector<int> order;
    for (int j = 0; j < rank; ++j)
      if (out.dims[j] != 1) order.push_back(j);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return out.strides[a] > out.strides[b]; });
    // merge an axis into the previous one when every operand is contiguous across them
    for (int j : order) {
      if (!dims_.empty()) {
        bool merge = true;
        for (size_t o = 0; o <= nin; ++o)
          if (strides_[o].back() != st[o][j] * out.dims[j]) merge = false;
        if (merge) {
          dims_.back() *= out.dims[j];
          for (size_t o = 0; o <= nin; ++o) strides_[o].back() = st[o][j];
          continue;
        }
      }
      dims_.push_back(out.dims[j]);
      strides_.resize(nin + 1);
      for (size_t o = 0; o <= nin; ++o) strides_[o].push_back(st[o][j]);
    }
    if (dims_.empty()) {
      dims_.push_back(1);
      strides_.assign(nin + 1, std::vector<int64_t>{0});
    }
    if (strides_.size() != nin + 1) strides_.resize(nin + 1, std::vector<int64_t>(dims_.size(), 0));
    inner_ = dims_.back();
    tiles_per_row_ = (inner_ + kTile - 1) / kTile;
    rows_ = total_ / std::max<int64_t>(inner_, 1);
    // short rows: a tile takes `rpt_` consecutive indices of the second-innermost dim
    const int nd = static_cast<int>(dims_.size());
    if (nd >= 2 && inner_ > 0 && inner_ < kTile / 2) {
      const int64_t d2 = dims_[nd - 2];
      for (int64_t r = std::min<int64_t>(kTile / inner_, d2); r >= 1; --r)
        if (d2 % r == 0) {
          rpt_ = r;
          break;
        }
    }
    elem_sizes_.push_back(dtype_size(out.dtype));
    for (size_t i = 0; i < nin; ++i) elem_sizes_.push_back(dtype_size(in_dtypes_[i]));
    // operands read / written in place: unit inner stride, rows of a tile back to back
    auto in_place = [&](size_t o, DType dt) {
      return dt == own_dtype() && strides_[o][nd - 1] == 1 &&
             (rpt_ == 1 || strides_[o][nd - 2] == inner_);
    };
    direct_out_ = in_place(0, out.dtype) && result_ >= static_cast<int>(nin);
    for (size_t i = 0; i < nin; ++i) direct_in_.push_back(in_place(i + 1, in_dtypes_[i]));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    if (total_ == 0) return;
    const int64_t rpt = rpt_;
    const int64_t tile_len = rpt > 1 ? rpt * inner_ : kTile;
    const int64_t tasks = rpt > 1 ? rows_ / rpt : rows_ * tiles_per_row_;
    const size_t nops = strides_.size();
    const int nd = static_cast<int>(dims_.size());
#pragma omp parallel if (total_ > kParallelElems)
    {
      thread_local std::vector<T> scratch;
      thread_local std::vector<T*> regs;
      thread_local std::vector<int64_t> off;
      if (scratch.size() < static_cast<size_t>(num_regs_ * tile_len))
        scratch.resize(num_regs_ * tile_len);
      if (regs.size() < static_cast<size_t>(num_regs_)) regs.resize(num_regs_);
      if (off.size() < nops) off.resize(nops);
      T* const buf = scratch.data();
      T** const reg = regs.data();
      int64_t* const offs = off.data();
#pragma omp for schedule(static)
      for (int64_t task = 0; task < tasks; ++task) {
        int64_t row, start, n;
        if (rpt > 1) {
          row = task * rpt;
          start = 0;
          n = inner_;
        } else {
          row = task / tiles_per_row_;
          start = (task % tiles_per_row_) * kTile;
          n = std::min(kTile, inner_ - start);
        }
        // element offsets of the tile's first element for every operand
        for (size_t o = 0; o < nops; ++o) offs[o] = start * strides_[o][nd - 1];
        int64_t rem = row;
        for (int j = nd - 2; j >= 0; --j) {
          int64_t idx = rem % dims_[j];
          rem /= dims_[j];
          for (size_t o = 0; o < nops; ++o) offs[o] += idx * strides_[o][j];
        }
        for (int r = 0; r < num_regs_; ++r) reg[r] = buf + r * tile_len;
        for (size_t i = 0; i + 1 < nops; ++i) {
          const char* p = static_cast<const char*>(inputs[i]) + offs[i + 1] * elem_sizes_[i + 1];
          const int64_t s = strides_[i + 1][nd - 1];
          if (direct_in_[i]) {
            reg[i] = const_cast<T*>(reinterpret_cast<const T*>(p));
          } else if (rpt > 1) {
            const int64_t rs = strides_[i + 1][nd - 2] * elem_sizes_[i + 1];
            for (int64_t j = 0; j < rpt; ++j)
              load<T>(in_dtypes_[i], p + j * rs, s, n, reg[i] + j * n);
          } else {
            load<T>(in_dtypes_[i], p, s, n, reg[i]);
          }
        }
        char* outp = static_cast<char*>(outputs[0]) + offs[0] * elem_sizes_[0];
        if (direct_out_) reg[result_] = reinterpret_cast<T*>(outp);
        eval<T>(prog_, reg, n * rpt);
        if (!direct_out_) {
          const int64_t s = strides_[0][nd - 1];
          if (rpt > 1) {
            const int64_t rs = strides_[0][nd - 2] * elem_sizes_[0];
            for (int64_t j = 0; j < rpt; ++j)
              store<T>(out_dtype_, reg[result_] + j * n, n, outp + j * rs, s);
          } else {
            store<T>(out_dtype_, reg[result_], n, outp, s);
          }
        }
      }
    }
  }

 private:
  static constexpr DType own_dtype() { return sizeof(T) == 4 ? DType::f32 : DType::f64; }

  std::vector<PwInstr> prog_;
  int num_regs_, result_;
  std::vector<DType> in_dtypes_;
  DType out_dtype_;
  std::vector<int64_t> dims_;
  std::vector<std::vector<int64_t>> strides_;  // [operand][dim], operand 0 = output
  std::vector<size_t> elem_sizes_;
  int64_t total_ = 0, inner_ = 1, tiles_per_row_ = 1, rows_ = 0;
  bool direct_out_ = false;
  std::vector<bool> direct_in_;
  int64_t rpt_ = 1;  // rows per tile
};

std::unique_ptr<Kernel> make_pointwise(const KernelSpec& spec) {
  if (spec.outputs.size() != 1) spec_error(spec, "takes one output");
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (!spec.has_input(i)) spec_error(spec, "inputs must all be present");
  std::vector<int64_t> code = spec.attrs.get_ints("program");
  std::vector<double> params;
  if (spec.attrs.has("params")) params = spec.attrs.get_floats("params");
  const int num_regs = static_cast<int>(spec.attrs.get_int("num_regs"));
  const int result = static_cast<int>(spec.attrs.get_int("result"));
  const std::string compute = spec.attrs.get_str("compute", "f32");
  if (code.size() % 5 != 0) spec_error(spec, "program length is not a multiple of 5");
  const size_t count = code.size() / 5;
  if (params.size() != 2 * count) spec_error(spec, "params must hold 2 floats per instruction");
  const int nin = static_cast<int>(spec.inputs.size());
  if (num_regs < nin || result < 0 || result >= num_regs) spec_error(spec, "bad register count");
  std::vector<PwInstr> prog(count);
  for (size_t k = 0; k < count; ++k) {
    PwInstr& in = prog[k];
    in.op = static_cast<int32_t>(code[5 * k]);
    in.dst = static_cast<int32_t>(code[5 * k + 1]);
    in.a = static_cast<int32_t>(code[5 * k + 2]);
    in.b = static_cast<int32_t>(code[5 * k + 3]);
    in.c = static_cast<int32_t>(code[5 * k + 4]);
    in.p0 = params[2 * k];
    in.p1 = params[2 * k + 1];
    if (in.op < 0 || in.op >= kNumOps) spec_error(spec, "unknown opcode " + std::to_string(in.op));
    if (in.dst < nin || in.dst >= num_regs) spec_error(spec, "bad destination register");
    for (int32_t r : {in.a, in.b, in.c})
      if (r >= num_regs) spec_error(spec, "bad operand register");
  }
  if (compute == "f64")
    return std::make_unique<PointwiseKernel<double>>(spec, prog, num_regs, result);
  if (compute != "f32") spec_error(spec, "compute must be f32 or f64");
  return std::make_unique<PointwiseKernel<float>>(spec, prog, num_regs, result);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Pointwise", make_pointwise);

}  // namespace graphkiln
