// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The per-row gate math of the recurrent kernels (rnn.cpp): ONNX's activation list and one
// function per cell that turns a batch row's pre-activations (X W^T + bias, from the input
// projection, and H R^T, from the step's GEMM) into the new state. Built twice from
// rnn_cell.inc: baseline x86-64 (rnn_cell.cpp) and AVX2 + FMA (rnn_cell_avx2.cpp), chosen
// at run time by rnn_cell_ops().
#pragma once

#include <cstdint>

namespace graphkiln {

// ONNX recurrent activations, numbered as the lowering (targets/cpu/lower_rnn.py) writes
// them in the kernels' `activations` attribute.
enum class RnnAct : int {
  relu = 0,
  tanh = 1,
  sigmoid = 2,
  affine = 3,
  leaky_relu = 4,
  thresholded_relu = 5,
  scaled_tanh = 6,
  hard_sigmoid = 7,
  elu = 8,
  softsign = 9,
  softplus = 10,
  count = 11,
};

struct RnnActivation {
  RnnAct kind = RnnAct::tanh;
  double alpha = 0.0, beta = 0.0;
};

// Matrices the GEMMs of rnn.cpp multiply by, packed once: B (N rows of K values, row-major)
// as ceil(N / kRnnPanel) panels, panel p holding for each k the kRnnPanel values
// B[p * kRnnPanel + j][k] (zero past N), kRnnPanel-aligned in a 64-byte aligned buffer.
constexpr int64_t kRnnPanel = 32;
inline int64_t rnn_packed_size(int64_t N, int64_t K) {
  return (N + kRnnPanel - 1) / kRnnPanel * K * kRnnPanel;
}

// `clip` <= 0 means none. In every function `hr` holds the row's H R^T part on entry and is
// scratch afterwards; `xw` is the row's X W^T + bias part (read only).
template <typename T>
struct RnnCellOps {
  // C[M, N] (row stride ldc) = A[M, K] (row stride lda) B^T, B packed (see kRnnPanel); with
  // `accumulate`, C += A B^T. Threads over panels when the product is large.
  void (*gemm)(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* packed, T* C,
               int64_t ldc, bool accumulate);
  // RNN: h <- f(clip(xw + hr)), H values.
  void (*rnn)(const T* xw, T* hr, T* h, const RnnActivation& f, T clip, int64_t H);
  // LSTM, gates i, o, f, c (4H values each of xw and hr); peep (3H: i, o, f) may be null.
  // c <- forget * c + i * g(.), h <- o * h(c).
  void (*lstm)(const T* xw, T* hr, T* h, T* c, const T* peep, const RnnActivation* acts, T clip,
               bool input_forget, int64_t H);
  // GRU, first half: hr[0, 2H) <- z, r = f(clip(xw + hr)) over gates z, r; when rh is not
  // null, rh <- r * h (the input of linear_before_reset = 0's second GEMM).
  void (*gru_zr)(const T* xw, T* hr, const T* h, T* rh, const RnnActivation& f, T clip, int64_t H);
  // GRU, second half: cand = xw_h + (rbh ? r * (hh + rbh) : hh), with zr = [z, r] from
  // gru_zr and hh the row's H R_h^T (or (r * H) R_h^T) part, overwritten;
  // h <- (1 - z) * g(clip(cand)) + z * h.
  void (*gru_out)(const T* xw_h, const T* zr, T* hh, const T* rbh, T* h, const RnnActivation& g,
                  T clip, int64_t H);
};

const RnnCellOps<float>& rnn_cell_ops_f32();
const RnnCellOps<double>& rnn_cell_ops_f64();

// The builds rnn_cell_ops_*() chooses between.
const RnnCellOps<float>& rnn_cell_ops_f32_generic();
const RnnCellOps<double>& rnn_cell_ops_f64_generic();
const RnnCellOps<float>& rnn_cell_ops_f32_avx2();
const RnnCellOps<double>& rnn_cell_ops_f64_avx2();

}  // namespace graphkiln
