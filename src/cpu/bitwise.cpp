// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Integer bit operations computed exactly in the element type (the Pointwise interpreter
// works in float / double): "Bitwise" (attr op: "and", "or", "xor", "shl", "shr") over two
// inputs broadcast (numpy rules) to the output, and "BitwiseNot". All operands share one
// integer dtype; inputs and the output are plain.
//
// Shifts follow ONNX / ref: amounts < 0 or >= the bit width give 0, except a right shift of
// a negative signed value, which gives -1 (the sign fill); right shifts of signed values
// are arithmetic.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelElems = 1 << 16;

enum class BitOp { kAnd, kOr, kXor, kShl, kShr };

template <typename T>
inline T shift(T x, T y, bool left) {
  constexpr int bits = sizeof(T) * 8;
  using U = std::make_unsigned_t<T>;
  if (y < 0 || static_cast<uint64_t>(y) >= static_cast<uint64_t>(bits)) {
    if (!left && std::is_signed_v<T> && x < 0) return T(-1);
    return T(0);
  }
  if (left) return static_cast<T>(static_cast<U>(x) << static_cast<int>(y));
  return static_cast<T>(x >> static_cast<int>(y));  // arithmetic for signed T
}

// out[i] = op(a[i * sa], b[i * sb]) over n elements
template <typename T, BitOp OP>
inline void row(const T* a, int64_t sa, const T* b, int64_t sb, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T x = a[i * sa], y = b[i * sb];
    if constexpr (OP == BitOp::kAnd) out[i] = x & y;
    else if constexpr (OP == BitOp::kOr) out[i] = x | y;
    else if constexpr (OP == BitOp::kXor) out[i] = x ^ y;
    else if constexpr (OP == BitOp::kShl) out[i] = shift<T>(x, y, true);
    else out[i] = shift<T>(x, y, false);
  }
}

// Output dims merged where both inputs allow it; strides of a and b aligned to them.
struct Broadcast {
  std::vector<int64_t> dims, sa, sb;
  int64_t total = 1;
};

Broadcast make_broadcast(const KernelSpec& spec) {
  const TensorInfo& out = spec.outputs[0];
  const int rank = out.rank();
  std::vector<int64_t> st[2] = {std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 0)};
  for (int k = 0; k < 2; ++k) {
    const TensorInfo& t = spec.inputs[k];
    if (t.rank() > rank) spec_error(spec, "an input has a higher rank than the output");
    std::vector<int64_t> rm = row_major_strides(t.dims);
    const int shift_axes = rank - t.rank();
    for (int j = 0; j < t.rank(); ++j) {
      const int64_t d = t.dims[j], od = out.dims[j + shift_axes];
      if (d == od) st[k][j + shift_axes] = d == 1 ? 0 : rm[j];
      else if (d == 1) st[k][j + shift_axes] = 0;
      else spec_error(spec, "input " + std::to_string(k) + " does not broadcast to the output");
    }
  }
  Broadcast bc;
  for (int j = 0; j < rank; ++j) {
    const int64_t d = out.dims[j];
    bc.total *= d;
    if (d == 1) continue;
    if (!bc.dims.empty() && bc.sa.back() == st[0][j] * d && bc.sb.back() == st[1][j] * d) {
      bc.dims.back() *= d;
      bc.sa.back() = st[0][j];
      bc.sb.back() = st[1][j];
      continue;
    }
    bc.dims.push_back(d);
    bc.sa.push_back(st[0][j]);
    bc.sb.push_back(st[1][j]);
  }
  if (bc.dims.empty()) {
    bc.dims = {1};
    bc.sa = {0};
    bc.sb = {0};
  }
  return bc;
}

template <typename T, BitOp OP>
class BitwiseKernel : public Kernel {
 public:
  explicit BitwiseKernel(Broadcast bc) : bc_(std::move(bc)) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const T* a = static_cast<const T*>(inputs[0]);
    const T* b = static_cast<const T*>(inputs[1]);
    T* out = static_cast<T*>(outputs[0]);
    const int nd = static_cast<int>(bc_.dims.size());
    const int64_t inner = bc_.dims[nd - 1];
    const int64_t rows = inner ? bc_.total / inner : 0;
    const int64_t isa = bc_.sa[nd - 1], isb = bc_.sb[nd - 1];
#pragma omp parallel for schedule(static) if (bc_.total > kParallelElems)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t oa = 0, ob = 0, rem = r;
      for (int j = nd - 2; j >= 0; --j) {
        const int64_t idx = rem % bc_.dims[j];
        rem /= bc_.dims[j];
        oa += idx * bc_.sa[j];
        ob += idx * bc_.sb[j];
      }
      row<T, OP>(a + oa, isa, b + ob, isb, out + r * inner, inner);
    }
  }

 private:
  Broadcast bc_;
};

template <typename T>
std::unique_ptr<Kernel> make_typed(BitOp op, Broadcast bc) {
  switch (op) {
    case BitOp::kAnd: return std::make_unique<BitwiseKernel<T, BitOp::kAnd>>(std::move(bc));
    case BitOp::kOr: return std::make_unique<BitwiseKernel<T, BitOp::kOr>>(std::move(bc));
    case BitOp::kXor: return std::make_unique<BitwiseKernel<T, BitOp::kXor>>(std::move(bc));
    case BitOp::kShl: return std::make_unique<BitwiseKernel<T, BitOp::kShl>>(std::move(bc));
    case BitOp::kShr: return std::make_unique<BitwiseKernel<T, BitOp::kShr>>(std::move(bc));
  }
  return nullptr;
}

void check_plain_ints(const KernelSpec& spec, size_t num_inputs) {
  if (spec.inputs.size() != num_inputs || spec.outputs.size() != 1)
    spec_error(spec, "takes " + std::to_string(num_inputs) + " inputs and one output");
  const DType dt = spec.outputs[0].dtype;
  switch (dt) {
    case DType::i8:
    case DType::i16:
    case DType::i32:
    case DType::i64:
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::u64: break;
    default: spec_error(spec, "integer tensors only");
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    if (!spec.has_input(i)) spec_error(spec, "inputs must all be present");
    if (spec.inputs[i].dtype != dt) spec_error(spec, "inputs and output must share one dtype");
    if (!spec.inputs[i].is_contiguous()) spec_error(spec, "plain inputs only");
  }
  if (!spec.outputs[0].is_contiguous()) spec_error(spec, "plain output only");
}

std::unique_ptr<Kernel> make_bitwise(const KernelSpec& spec) {
  check_plain_ints(spec, 2);
  const std::string name = spec.attrs.get_str("op");
  BitOp op;
  if (name == "and") op = BitOp::kAnd;
  else if (name == "or") op = BitOp::kOr;
  else if (name == "xor") op = BitOp::kXor;
  else if (name == "shl") op = BitOp::kShl;
  else if (name == "shr") op = BitOp::kShr;
  else spec_error(spec, "op must be and, or, xor, shl or shr");
  Broadcast bc = make_broadcast(spec);
  switch (spec.outputs[0].dtype) {
    case DType::i8: return make_typed<int8_t>(op, std::move(bc));
    case DType::i16: return make_typed<int16_t>(op, std::move(bc));
    case DType::i32: return make_typed<int32_t>(op, std::move(bc));
    case DType::i64: return make_typed<int64_t>(op, std::move(bc));
    case DType::u8: return make_typed<uint8_t>(op, std::move(bc));
    case DType::u16: return make_typed<uint16_t>(op, std::move(bc));
    case DType::u32: return make_typed<uint32_t>(op, std::move(bc));
    default: return make_typed<uint64_t>(op, std::move(bc));
  }
}

// Bitwise NOT works on the bytes: ~ of each 8-byte word (tail bytewise).
class BitwiseNotKernel : public Kernel {
 public:
  explicit BitwiseNotKernel(size_t nbytes) : nbytes_(nbytes) {}
  void run(const void* const* inputs, void* const* outputs) override {
    const uint8_t* x = static_cast<const uint8_t*>(inputs[0]);
    uint8_t* y = static_cast<uint8_t*>(outputs[0]);
    const int64_t n = static_cast<int64_t>(nbytes_);
#pragma omp parallel for schedule(static) if (n > 8 * kParallelElems)
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<uint8_t>(~x[i]);
  }

 private:
  size_t nbytes_;
};

std::unique_ptr<Kernel> make_bitwise_not(const KernelSpec& spec) {
  check_plain_ints(spec, 1);
  if (spec.inputs[0].dims != spec.outputs[0].dims) spec_error(spec, "input and output dims differ");
  return std::make_unique<BitwiseNotKernel>(spec.outputs[0].nbytes());
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Bitwise", make_bitwise);
GRAPHKILN_REGISTER_KERNEL("BitwiseNot", make_bitwise_not);

}  // namespace graphkiln
