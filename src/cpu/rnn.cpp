// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "RNN", "GRU", "LSTM": ONNX recurrent layers, float32 or float64, every direction, layout
// 0 and 1, sequence_lens, initial states, peepholes, clip, input_forget,
// linear_before_reset and the ONNX activation list.
// Inputs as the ONNX node (absent optional ones null): X, W, R, B, sequence_lens (int32),
// initial_h, and for LSTM initial_c, P. Outputs: those of Y, Y_h, Y_c the node uses, named
// by `outputs` (0 = Y, 1 = Y_h, 2 = Y_c) in order.
// attrs: direction (forward / reverse / bidirectional), hidden, layout, outputs,
//   activations (RnnAct codes, per direction the cell's count: RNN f; GRU f, g; LSTM f, g,
//   h), activation_alpha / activation_beta (one per activation, defaults resolved by the
//   lowering), clip (0: none), input_forget (LSTM), linear_before_reset (GRU).
// Per run: X W^T + (Wb + Rb) for every step and direction as one GEMM up front, then per
// step and direction H R^T (one GEMM over the batch; GRU with linear_before_reset = 0 a
// second one on r * H) and the gate math of rnn_cell.hpp per batch row. The GEMMs are
// rnn_cell.hpp's, on W and R packed in panels: once at build when they are constants, per
// run otherwise. Scratch (packed weights, the projection, states, gate rows) belongs to the
// kernel, allocated when it is built: nothing is allocated per run.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/kernel.hpp"
#include "cpu/rnn_cell.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 32768;  // gate values per step below which rows run serially

enum class Cell { rnn, gru, lstm };

// f(i) for i in [0, n): OpenMP threads when `parallel` (never an OpenMP region otherwise: a
// serial one costs about as much as a small step's gate math).
template <typename F>
void for_each_row(int64_t n, bool parallel, const F& f) {
  if (!parallel) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) f(i);
}

// A 64-byte aligned array, allocated once.
template <typename T>
class AlignedArray {
 public:
  void resize(int64_t n) {
    const size_t bytes = (static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T) + 63) / 64 * 64;
    data_.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
    if (!data_) throw std::bad_alloc();
  }
  T* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
};

// B (N rows of K values, row-major) packed as rnn_cell.hpp's panels.
template <typename T>
void pack_panels(const T* B, int64_t N, int64_t K, T* out) {
  const int64_t panels = (N + kRnnPanel - 1) / kRnnPanel;
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t k = 0; k < K; ++k) {
      T* dst = out + (p * K + k) * kRnnPanel;
      for (int64_t j = 0; j < kRnnPanel; ++j) {
        const int64_t n = p * kRnnPanel + j;
        dst[j] = n < N ? B[n * K + k] : T(0);
      }
    }
}

struct Shape {
  Cell cell = Cell::lstm;
  int64_t S = 0, B = 0, I = 0, H = 0, D = 1, G = 4;  // steps, batch, input, hidden, dirs, gates
  int layout = 0;
  bool reverse_only = false;  // direction "reverse"
  double clip = 0.0;
  bool input_forget = false, linear_before_reset = false;
  std::vector<RnnActivation> acts;  // D * per-direction count
  int y = -1, y_h = -1, y_c = -1;  // output index of Y, Y_h, Y_c, -1 when absent

  int64_t GH() const { return G * H; }
  int64_t x_row(int64_t t, int64_t b) const { return layout == 0 ? t * B + b : b * S + t; }
  int64_t y_at(int64_t t, int64_t d, int64_t b) const {
    return (layout == 0 ? (t * D + d) * B + b : (b * S + t) * D + d) * H;
  }
  int64_t state_at(int64_t d, int64_t b) const { return (layout == 0 ? d * B + b : b * D + d) * H; }
};

template <typename T>
class RecurrentKernel : public Kernel {
 public:
  RecurrentKernel(const KernelSpec& spec, Shape shape, const RnnCellOps<T>& ops)
      : s_(std::move(shape)), ops_(ops), name_(spec.kernel + " '" + spec.name + "'") {
    const int64_t D = s_.D, B = s_.B, H = s_.H, GH = s_.GH();
    xw_.assign(static_cast<size_t>(s_.S * B * D * GH), T(0));
    hr_.assign(static_cast<size_t>(B * GH), T(0));
    h_.assign(static_cast<size_t>(B * H), T(0));
    if (s_.cell == Cell::lstm) c_.assign(static_cast<size_t>(B * H), T(0));
    if (s_.cell == Cell::gru && !s_.linear_before_reset)
      rh_.assign(static_cast<size_t>(B * H), T(0));
    bias_.assign(static_cast<size_t>(D * GH), T(0));
    if (s_.cell == Cell::gru && s_.linear_before_reset)
      rbh_.assign(static_cast<size_t>(D * H), T(0));
    steps_.assign(static_cast<size_t>(B), 0);
    // R per direction: [0, GH), or for GRU with linear_before_reset = 0 [0, 2H) and [2H, 3H)
    const bool split = s_.cell == Cell::gru && !s_.linear_before_reset;
    int64_t at = 0;
    for (int64_t d = 0; d < D; ++d) {
      r_at_.push_back(at);
      at += split ? rnn_packed_size(2 * H, H) : rnn_packed_size(GH, H);
      r_at_.push_back(at);
      at += split ? rnn_packed_size(H, H) : 0;
    }
    r_packed_.resize(at);
    w_packed_.resize(rnn_packed_size(D * GH, s_.I));
    w_constant_ = spec.inputs[1].constant != nullptr;
    r_constant_ = spec.inputs[2].constant != nullptr;
    if (w_constant_) pack_w(static_cast<const T*>(spec.inputs[1].constant));
    if (r_constant_) pack_r(static_cast<const T*>(spec.inputs[2].constant));
    bias_constant_ = !spec.has_input(3) || spec.inputs[3].constant != nullptr;
    if (spec.has_input(3) && bias_constant_)
      fold_bias(static_cast<const T*>(spec.inputs[3].constant));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    const T* w = static_cast<const T*>(inputs[1]);
    const T* r = static_cast<const T*>(inputs[2]);
    const int32_t* lens = static_cast<const int32_t*>(inputs[4]);
    const T* init_h = static_cast<const T*>(inputs[5]);
    const T* init_c = s_.cell == Cell::lstm ? static_cast<const T*>(inputs[6]) : nullptr;
    const T* peep = s_.cell == Cell::lstm ? static_cast<const T*>(inputs[7]) : nullptr;
    T* y = s_.y >= 0 ? static_cast<T*>(outputs[s_.y]) : nullptr;
    T* y_h = s_.y_h >= 0 ? static_cast<T*>(outputs[s_.y_h]) : nullptr;
    T* y_c = s_.y_c >= 0 ? static_cast<T*>(outputs[s_.y_c]) : nullptr;
    const int64_t S = s_.S, B = s_.B, H = s_.H, D = s_.D, GH = s_.GH();

    // steps_[b]: how many steps batch row b runs (throws before any parallel region)
    int64_t longest = 0;
    bool ends_early = false;  // some row stops before S: its later Y rows stay zero
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = lens ? lens[b] : S;
      if (n < 0 || n > S)
        throw std::out_of_range(name_ + ": sequence_lens[" + std::to_string(b) + "] is " +
                                std::to_string(n) + ", outside [0, " + std::to_string(S) + "]");
      steps_[b] = n;
      longest = std::max(longest, n);
      ends_early = ends_early || n < S;
    }
    if (!bias_constant_) fold_bias(static_cast<const T*>(inputs[3]));
    if (!w_constant_) pack_w(w);
    if (!r_constant_) pack_r(r);
    if (y && ends_early) std::memset(y, 0, sizeof(T) * S * D * B * H);

    // the input projection of every step, both directions: XW = X W^T + bias
    const int64_t rows = S * B;
    for (int64_t i = 0; i < rows; ++i)
      std::memcpy(xw_.data() + i * D * GH, bias_.data(), sizeof(T) * D * GH);
    ops_.gemm(rows, D * GH, s_.I, x, s_.I, w_packed_.data(), xw_.data(), D * GH, true);

    for (int64_t d = 0; d < D; ++d) {
      const bool reverse = s_.reverse_only || d == 1;
      const RnnActivation* acts = s_.acts.data() + d * (s_.acts.size() / D);
      for (int64_t b = 0; b < B; ++b) {
        const int64_t at = s_.state_at(d, b);
        if (init_h) std::memcpy(&h_[b * H], init_h + at, sizeof(T) * H);
        else std::fill_n(&h_[b * H], H, T(0));
        if (s_.cell == Cell::lstm) {
          if (init_c) std::memcpy(&c_[b * H], init_c + at, sizeof(T) * H);
          else std::fill_n(&c_[b * H], H, T(0));
        }
      }
      const T* p_d = peep ? peep + d * 3 * H : nullptr;
      for (int64_t step = 0; step < longest; ++step) {
        run_step(d, step, reverse, p_d, acts, y);
      }
      for (int64_t b = 0; b < B; ++b) {
        const int64_t at = s_.state_at(d, b);
        if (y_h) std::memcpy(y_h + at, &h_[b * H], sizeof(T) * H);
        if (y_c) std::memcpy(y_c + at, &c_[b * H], sizeof(T) * H);
      }
    }
  }

 private:
  // bias_ <- Wb + Rb per direction (GRU with linear_before_reset: Rb's h part kept apart)
  void fold_bias(const T* b) {
    const int64_t GH = s_.GH(), H = s_.H;
    const bool split = s_.cell == Cell::gru && s_.linear_before_reset;
    for (int64_t d = 0; d < s_.D; ++d) {
      const T* wb = b + d * 2 * GH;
      const T* rb = wb + GH;
      for (int64_t j = 0; j < GH; ++j)
        bias_[d * GH + j] = wb[j] + (split && j >= 2 * H ? T(0) : rb[j]);
      if (split) std::copy(rb + 2 * H, rb + 3 * H, &rbh_[d * H]);
    }
  }

  // The time index batch row b reads at `step`, or -1 once its sequence has ended.
  int64_t time_of(int64_t b, int64_t step, bool reverse) const {
    const int64_t n = steps_[b];
    if (step >= n) return -1;
    return reverse ? n - 1 - step : step;
  }

  void pack_w(const T* w) { pack_panels(w, s_.D * s_.GH(), s_.I, w_packed_.data()); }

  void pack_r(const T* r) {
    const int64_t H = s_.H, GH = s_.GH();
    const bool split = s_.cell == Cell::gru && !s_.linear_before_reset;
    for (int64_t d = 0; d < s_.D; ++d) {
      const T* r_d = r + d * GH * H;
      pack_panels(r_d, split ? 2 * H : GH, H, r_packed_.data() + r_at_[2 * d]);
      if (split) pack_panels(r_d + 2 * H * H, H, H, r_packed_.data() + r_at_[2 * d + 1]);
    }
  }

  void run_step(int64_t d, int64_t step, bool reverse, const T* p_d, const RnnActivation* acts,
                T* y) {
    const int64_t B = s_.B, H = s_.H, D = s_.D, GH = s_.GH();
    const T clip = static_cast<T>(s_.clip);
    const bool parallel = B > 1 && B * GH > kParallelWork;
    const bool gru_two_gemms = s_.cell == Cell::gru && !s_.linear_before_reset;
    // H R^T over the whole batch (rows already finished are computed and ignored)
    const T* r_d = r_packed_.data() + r_at_[2 * d];
    ops_.gemm(B, gru_two_gemms ? 2 * H : GH, H, h_.data(), H, r_d, hr_.data(), GH, false);
    auto xw_row = [&](int64_t t, int64_t b) {
      return xw_.data() + s_.x_row(t, b) * D * GH + d * GH;
    };

    if (s_.cell == Cell::gru) {
      const T* rbh = s_.linear_before_reset ? &rbh_[d * H] : nullptr;
      for_each_row(B, parallel, [&](int64_t b) {
        const int64_t t = time_of(b, step, reverse);
        if (t < 0) return;
        ops_.gru_zr(xw_row(t, b), &hr_[b * GH], &h_[b * H], gru_two_gemms ? &rh_[b * H] : nullptr,
                    acts[0], clip, H);
      });
      if (gru_two_gemms)  // (r * H) R_h^T into the rows' third block
        ops_.gemm(B, H, H, rh_.data(), H, r_packed_.data() + r_at_[2 * d + 1], hr_.data() + 2 * H,
                  GH, false);
      for_each_row(B, parallel, [&](int64_t b) {
        const int64_t t = time_of(b, step, reverse);
        if (t < 0) return;
        T* row = &hr_[b * GH];
        ops_.gru_out(xw_row(t, b) + 2 * H, row, row + 2 * H, rbh, &h_[b * H], acts[1], clip, H);
        if (y) std::memcpy(y + s_.y_at(t, d, b), &h_[b * H], sizeof(T) * H);
      });
      return;
    }
    for_each_row(B, parallel, [&](int64_t b) {
      const int64_t t = time_of(b, step, reverse);
      if (t < 0) return;
      if (s_.cell == Cell::lstm)
        ops_.lstm(xw_row(t, b), &hr_[b * GH], &h_[b * H], &c_[b * H], p_d, acts, clip,
                  s_.input_forget, H);
      else ops_.rnn(xw_row(t, b), &hr_[b * GH], &h_[b * H], acts[0], clip, H);
      if (y) std::memcpy(y + s_.y_at(t, d, b), &h_[b * H], sizeof(T) * H);
    });
  }

  Shape s_;
  const RnnCellOps<T>& ops_;
  std::string name_;
  bool bias_constant_ = true, w_constant_ = true, r_constant_ = true;
  AlignedArray<T> w_packed_, r_packed_;
  std::vector<int64_t> r_at_;  // per direction: where its packed R (two parts) starts
  std::vector<T> xw_, hr_, h_, c_, rh_, bias_, rbh_;
  std::vector<int64_t> steps_;
};

void expect_dims(const KernelSpec& spec, const TensorInfo& t, const std::vector<int64_t>& dims,
                 const char* what) {
  if (t.dims != dims || !t.is_contiguous()) {
    std::string want;
    for (int64_t v : dims) want += (want.empty() ? "" : ", ") + std::to_string(v);
    spec_error(spec, std::string(what) + " must be plain data of dims (" + want + ")");
  }
}

std::unique_ptr<Kernel> make_recurrent(const KernelSpec& spec) {
  Shape s;
  s.cell = spec.kernel == "LSTM" ? Cell::lstm : spec.kernel == "GRU" ? Cell::gru : Cell::rnn;
  s.G = s.cell == Cell::lstm ? 4 : s.cell == Cell::gru ? 3 : 1;
  const size_t n_inputs = s.cell == Cell::lstm ? 8 : 6;
  if (spec.inputs.size() != n_inputs)
    spec_error(spec, "takes " + std::to_string(n_inputs) + " inputs");
  if (!spec.has_input(0) || !spec.has_input(1) || !spec.has_input(2))
    spec_error(spec, "X, W and R are required");
  const TensorInfo& x = spec.inputs[0];
  const DType dt = x.dtype;
  if (dt != DType::f32 && dt != DType::f64) spec_error(spec, "only float32 and float64");
  s.layout = static_cast<int>(spec.attrs.get_int("layout"));
  if (s.layout != 0 && s.layout != 1) spec_error(spec, "layout must be 0 or 1");
  const std::string direction = spec.attrs.get_str("direction");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    spec_error(spec, "direction must be forward, reverse or bidirectional");
  s.D = direction == "bidirectional" ? 2 : 1;
  s.reverse_only = direction == "reverse";
  s.H = spec.attrs.get_int("hidden");
  if (x.rank() != 3 || s.H <= 0) spec_error(spec, "X must be 3-D and hidden positive");
  s.S = s.layout == 0 ? x.dims[0] : x.dims[1];
  s.B = s.layout == 0 ? x.dims[1] : x.dims[0];
  s.I = x.dims[2];
  s.clip = spec.attrs.get_float("clip", 0.0);
  s.input_forget = spec.attrs.get_int("input_forget", 0) != 0;
  s.linear_before_reset = spec.attrs.get_int("linear_before_reset", 0) != 0;
  if (s.cell != Cell::lstm && s.input_forget) spec_error(spec, "input_forget is LSTM's");
  if (s.cell != Cell::gru && s.linear_before_reset)
    spec_error(spec, "linear_before_reset is GRU's");

  const int64_t D = s.D, H = s.H, GH = s.GH(), B = s.B;
  expect_dims(spec, x, x.dims, "X");
  expect_dims(spec, spec.inputs[1], {D, GH, s.I}, "W");
  expect_dims(spec, spec.inputs[2], {D, GH, H}, "R");
  if (spec.has_input(3)) expect_dims(spec, spec.inputs[3], {D, 2 * GH}, "B");
  if (spec.has_input(4)) {
    if (spec.inputs[4].dtype != DType::i32) spec_error(spec, "sequence_lens must be int32");
    expect_dims(spec, spec.inputs[4], {B}, "sequence_lens");
  }
  const std::vector<int64_t> state = s.layout == 0 ? std::vector<int64_t>{D, B, H}
                                                   : std::vector<int64_t>{B, D, H};
  const int last_state = s.cell == Cell::lstm ? 6 : 5;
  for (int i = 5; i <= last_state; ++i)
    if (spec.has_input(i))
      expect_dims(spec, spec.inputs[i], state, i == 5 ? "initial_h" : "initial_c");
  if (s.cell == Cell::lstm && spec.has_input(7)) expect_dims(spec, spec.inputs[7], {D, 3 * H}, "P");
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (i != 4 && spec.has_input(i) && spec.inputs[i].dtype != dt)
      spec_error(spec, "X, W, R, B, the initial states and P must share one float type");

  const std::vector<int64_t> outs = spec.attrs.get_ints("outputs");
  if (outs.empty() || outs.size() != spec.outputs.size())
    spec_error(spec, "outputs must name each output (0 = Y, 1 = Y_h, 2 = Y_c)");
  const std::vector<int64_t> y_dims = s.layout == 0 ? std::vector<int64_t>{s.S, D, B, H}
                                                    : std::vector<int64_t>{B, s.S, D, H};
  for (size_t i = 0; i < outs.size(); ++i) {
    const int64_t which = outs[i];
    int* slot = which == 0 ? &s.y : which == 1 ? &s.y_h : which == 2 ? &s.y_c : nullptr;
    if (!slot || *slot >= 0 || (which == 2 && s.cell != Cell::lstm))
      spec_error(spec, "outputs: bad or repeated output number " + std::to_string(which));
    *slot = static_cast<int>(i);
    if (spec.outputs[i].dtype != dt) spec_error(spec, "outputs must have X's type");
    expect_dims(spec, spec.outputs[i], which == 0 ? y_dims : state, which == 0 ? "Y" : "Y_h / Y_c");
  }

  const std::vector<int64_t> codes = spec.attrs.get_ints("activations");
  const std::vector<double> alpha = spec.attrs.get_floats("activation_alpha");
  const std::vector<double> beta = spec.attrs.get_floats("activation_beta");
  const size_t per_dir = s.cell == Cell::lstm ? 3 : s.cell == Cell::gru ? 2 : 1;
  if (codes.size() != per_dir * D || alpha.size() != codes.size() || beta.size() != codes.size())
    spec_error(spec, "activations, activation_alpha and activation_beta need " +
                         std::to_string(per_dir * D) + " entries each");
  for (size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] < 0 || codes[i] >= static_cast<int64_t>(RnnAct::count))
      spec_error(spec, "unknown activation code " + std::to_string(codes[i]));
    s.acts.push_back({static_cast<RnnAct>(codes[i]), alpha[i], beta[i]});
  }
  if (dt == DType::f32)
    return std::make_unique<RecurrentKernel<float>>(spec, std::move(s), rnn_cell_ops_f32());
  return std::make_unique<RecurrentKernel<double>>(spec, std::move(s), rnn_cell_ops_f64());
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("RNN", make_recurrent);
GRAPHKILN_REGISTER_KERNEL("GRU", make_recurrent);
GRAPHKILN_REGISTER_KERNEL("LSTM", make_recurrent);

}  // namespace graphkiln
