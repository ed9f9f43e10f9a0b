// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "MatMulInteger" (A, B, a_zero_point?, b_zero_point? -> int32 Y) and "QLinearMatMul"
// (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point -> 8-bit y):
// batched, broadcast products of i8 / u8 matrices A [..., M, K] and B [..., K, N] (plain
// tensors; a 1-D operand is a matrix of one row / column) with their zero points subtracted,
// summed in int32 (wrapping as the ref target's int64 -> int32 cast does).
//
// attrs (targets/native/lower_integer.py): m, k, n; batch (Y's batch dims); a_batch_strides /
// b_batch_strides (element strides of A's / B's matrices per batch dim, 0 where broadcast);
// for each zero point / scale present, <name>_strides: its element strides over (*batch,
// row) for A's (row: M) and (*batch, column) for B's (column: N), 0 where it is broadcast.
//
// QLinearMatMul requantizes each sum with double arithmetic: y = saturate(round_half_even(
// acc * (a_scale * b_scale) / y_scale) + y_zero_point), y_scale and y_zero_point one value.
// Scales are f32 / f64 / f16 / bf16.
//
// B is centered on its zero points once per run (int16, over B's own elements); run() is
// parallel over the rows of all batches.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel.hpp"
#include "cpu/int_product.hpp"

namespace graphkiln {
namespace {

using int_product::is_8bit;
using int_product::load8;
using int_product::wrap_add;

constexpr int64_t kParallelWork = 1 << 15;

// A zero point or scale broadcast over (*batch, line): its offset per flat batch index and
// its stride along the line (rows of A, columns of B). Absent: not present().
struct LineParam {
  std::vector<int64_t> batch_offset;
  int64_t line_stride = 0;
  bool present() const { return !batch_offset.empty(); }
};

// Offsets of every flat batch index for the per-batch-dim strides `strides`.
std::vector<int64_t> batch_offsets(const std::vector<int64_t>& batch,
                                   const std::vector<int64_t>& strides) {
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  std::vector<int64_t> out(static_cast<size_t>(count), 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t rest = b, off = 0;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      off += (rest % batch[d]) * strides[d];
      rest /= batch[d];
    }
    out[b] = off;
  }
  return out;
}

LineParam line_param(const KernelSpec& spec, size_t input, const std::vector<int64_t>& batch,
                     const std::vector<int64_t>& strides) {
  LineParam p;
  if (!spec.has_input(input)) return p;
  if (strides.size() != batch.size() + 1) spec_error(spec, "a parameter's strides: one per dim");
  p.batch_offset = batch_offsets(batch, std::vector<int64_t>(strides.begin(), strides.end() - 1));
  p.line_stride = strides.back();
  return p;
}

// The geometry and integer product shared by both kernels.
class IntMatMul {
 public:
  // a, b, a_zp, b_zp: the inputs' indices in the step
  IntMatMul(const KernelSpec& spec, size_t a, size_t b, size_t a_zp, size_t b_zp)
      : a_(a), b_(b), a_zp_(a_zp), b_zp_(b_zp) {
    const Attrs& attrs = spec.attrs;
    m_ = attrs.get_int("m");
    k_ = attrs.get_int("k");
    n_ = attrs.get_int("n");
    const std::vector<int64_t> batch = attrs.get_ints("batch");
    const std::vector<int64_t> a_strides = attrs.get_ints("a_batch_strides");
    const std::vector<int64_t> b_strides = attrs.get_ints("b_batch_strides");
    if (a_strides.size() != batch.size() || b_strides.size() != batch.size())
      spec_error(spec, "a_batch_strides and b_batch_strides: one per batch dim");
    a_offset_ = batch_offsets(batch, a_strides);
    b_offset_ = batch_offsets(batch, b_strides);
    batches_ = static_cast<int64_t>(a_offset_.size());
    const TensorInfo &ta = spec.inputs[a], &tb = spec.inputs[b];
    if (!is_8bit(ta.dtype) || !is_8bit(tb.dtype)) spec_error(spec, "A and B must be i8 or u8");
    if (!ta.is_contiguous() || !tb.is_contiguous()) spec_error(spec, "plain tensors only");
    a_signed_ = ta.dtype == DType::i8;
    b_signed_ = tb.dtype == DType::i8;
    for (size_t zp : {a_zp, b_zp})
      if (spec.has_input(zp) && spec.inputs[zp].dtype != spec.inputs[zp == a_zp ? a : b].dtype)
        spec_error(spec, "a zero point must have its operand's dtype");
    a_zp_param_ =
        line_param(spec, a_zp, batch,
                   spec.has_input(a_zp) ? attrs.get_ints("a_zp_strides") : std::vector<int64_t>{});
    b_zp_param_ =
        line_param(spec, b_zp, batch,
                   spec.has_input(b_zp) ? attrs.get_ints("b_zp_strides") : std::vector<int64_t>{});
    for (int64_t off : a_offset_)
      if (off + m_ * k_ > ta.numel()) spec_error(spec, "A smaller than its batch strides");
    for (int64_t off : b_offset_)
      if (off + k_ * n_ > tb.numel()) spec_error(spec, "B smaller than its batch strides");
    b_centered_.resize(static_cast<size_t>(tb.numel()));
    b_done_.resize(static_cast<size_t>(k_ * n_ > 0 ? tb.numel() / (k_ * n_) : 0));
  }

  int64_t rows() const { return batches_ * m_; }  // rows of all batches
  int64_t m() const { return m_; }
  int64_t n() const { return n_; }
  int64_t work() const { return batches_ * m_ * n_ * k_; }

  // B minus its zero points, as int16, for every matrix of B some batch reads
  void center_b(const void* const* inputs) {
    const void* b = inputs[b_];
    const void* zp = b_zp_param_.present() ? inputs[b_zp_] : nullptr;
    const int64_t kn = k_ * n_;
    if (kn == 0) return;
    std::fill(b_done_.begin(), b_done_.end(), false);
    for (int64_t bi = 0; bi < batches_; ++bi) {
      const int64_t base = b_offset_[bi];
      if (b_done_[base / kn]) continue;
      b_done_[base / kn] = true;
      int16_t* out = b_centered_.data() + base;
      const int64_t zp_base = zp ? b_zp_param_.batch_offset[bi] : 0;
      const int64_t zp_stride = b_zp_param_.line_stride;
      const bool sb = b_signed_;
      const int64_t n = n_;
#pragma omp parallel for schedule(static) if (kn > kParallelWork)
      for (int64_t r = 0; r < k_; ++r)
        for (int64_t j = 0; j < n; ++j) {
          const int32_t z = zp ? load8(zp, sb, zp_base + j * zp_stride) : 0;
          out[r * n + j] = static_cast<int16_t>(load8(b, sb, base + r * n + j) - z);
        }
    }
  }

  // acc[0..n) = row `row` (of all batches) of (A - a_zp) @ (B - b_zp); center_b ran before
  void row_product(const void* const* inputs, int64_t row, int32_t* acc) const {
    const int64_t bi = row / m_, i = row % m_, n = n_;
    const void* a = inputs[a_];
    const int32_t zp = a_zp_param_.present()
                           ? load8(inputs[a_zp_], a_signed_,
                                   a_zp_param_.batch_offset[bi] + i * a_zp_param_.line_stride)
                           : 0;
    const int64_t a_base = a_offset_[bi] + i * k_;
    const int16_t* bc = b_centered_.data() + b_offset_[bi];
    for (int64_t j = 0; j < n; ++j) acc[j] = 0;
    for (int64_t r = 0; r < k_; ++r) {
      const int32_t av = load8(a, a_signed_, a_base + r) - zp;
      if (av == 0) continue;
      const int16_t* brow = bc + r * n;
      for (int64_t j = 0; j < n; ++j) acc[j] = wrap_add(acc[j], av * static_cast<int32_t>(brow[j]));
    }
  }

  // the flat batch index of a row, for the parameters' offsets
  int64_t batch_of(int64_t row) const { return row / m_; }

 private:
  size_t a_, b_, a_zp_, b_zp_;
  int64_t m_, k_, n_, batches_;
  bool a_signed_, b_signed_;
  std::vector<int64_t> a_offset_, b_offset_;
  LineParam a_zp_param_, b_zp_param_;
  std::vector<int16_t> b_centered_;
  std::vector<char> b_done_;  // per matrix of B: centered in this run
};

class MatMulIntegerKernel : public Kernel {
 public:
  explicit MatMulIntegerKernel(const KernelSpec& spec) : mm_(spec, 0, 1, 2, 3) {}

  void run(const void* const* inputs, void* const* outputs) override {
    mm_.center_b(inputs);
    auto* y = static_cast<int32_t*>(outputs[0]);
    const int64_t rows = mm_.rows(), n = mm_.n();
#pragma omp parallel for schedule(static) if (mm_.work() > kParallelWork)
    for (int64_t row = 0; row < rows; ++row) mm_.row_product(inputs, row, y + row * n);
  }

 private:
  IntMatMul mm_;
};

std::unique_ptr<Kernel> make_matmul_integer(const KernelSpec& spec) {
  if (spec.inputs.size() < 2 || spec.inputs.size() > 4 || spec.outputs.size() != 1)
    spec_error(spec, "takes A, B, a_zero_point?, b_zero_point?");
  if (spec.outputs[0].dtype != DType::i32 || !spec.outputs[0].is_contiguous())
    spec_error(spec, "the output must be a plain i32 tensor");
  return std::make_unique<MatMulIntegerKernel>(spec);
}

class QLinearMatMulKernel : public Kernel {
 public:
  explicit QLinearMatMulKernel(const KernelSpec& spec) : mm_(spec, 0, 3, 2, 5) {
    const std::vector<int64_t> batch = spec.attrs.get_ints("batch");
    a_scale_ = line_param(spec, 1, batch, spec.attrs.get_ints("a_scale_strides"));
    b_scale_ = line_param(spec, 4, batch, spec.attrs.get_ints("b_scale_strides"));
    a_scale_dtype_ = spec.inputs[1].dtype;
    b_scale_dtype_ = spec.inputs[4].dtype;
    y_scale_dtype_ = spec.inputs[6].dtype;
    out_dtype_ = spec.outputs[0].dtype;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    using int_product::load_scale;
    mm_.center_b(inputs);
    const double y_scale = load_scale(y_scale_dtype_, inputs[6], 0);
    const bool zp_signed = out_dtype_ == DType::i8;
    const int_product::Requantizer requant(out_dtype_, load8(inputs[7], zp_signed, 0));
    void* y = outputs[0];
    const int64_t rows = mm_.rows(), n = mm_.n(), m = mm_.m();
#pragma omp parallel if (mm_.work() > kParallelWork)
    {
      std::vector<int32_t> acc(static_cast<size_t>(n));
#pragma omp for schedule(static)
      for (int64_t row = 0; row < rows; ++row) {
        mm_.row_product(inputs, row, acc.data());
        const int64_t bi = mm_.batch_of(row), i = row % m;
        const double as = load_scale(a_scale_dtype_, inputs[1],
                                     a_scale_.batch_offset[bi] + i * a_scale_.line_stride);
        const int64_t bs_base = b_scale_.batch_offset[bi], bs_stride = b_scale_.line_stride;
        for (int64_t j = 0; j < n; ++j) {
          const double bs = load_scale(b_scale_dtype_, inputs[4], bs_base + j * bs_stride);
          requant.store(y, row * n + j, static_cast<double>(acc[j]) * (as * bs) / y_scale);
        }
      }
    }
  }

 private:
  IntMatMul mm_;
  LineParam a_scale_, b_scale_;
  DType a_scale_dtype_, b_scale_dtype_, y_scale_dtype_, out_dtype_;
};

std::unique_ptr<Kernel> make_qlinear_matmul(const KernelSpec& spec) {
  if (spec.inputs.size() != 8 || spec.outputs.size() != 1)
    spec_error(spec,
               "takes a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, "
               "y_zero_point");
  for (size_t i = 0; i < 8; ++i)
    if (!spec.has_input(i)) spec_error(spec, "every input is required");
  const TensorInfo& y = spec.outputs[0];
  if (!is_8bit(y.dtype) || !y.is_contiguous()) spec_error(spec, "the output must be plain i8 / u8");
  if (spec.inputs[7].dtype != y.dtype) spec_error(spec, "y_zero_point must have y's dtype");
  for (size_t i : {1, 4, 6})
    if (!int_product::is_float(spec.inputs[i].dtype)) spec_error(spec, "scales must be floats");
  if (spec.inputs[6].numel() != 1 || spec.inputs[7].numel() != 1)
    spec_error(spec, "y_scale and y_zero_point must be single values");
  return std::make_unique<QLinearMatMulKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("MatMulInteger", make_matmul_integer);
GRAPHKILN_REGISTER_KERNEL("QLinearMatMul", make_qlinear_matmul);

}  // namespace graphkiln
