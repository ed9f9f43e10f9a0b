// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "DFT" and "STFT": discrete Fourier transforms of float32 / float64 signals, computed in
// double (complex<double>) and rounded once to the data type. A complex tensor is a real
// one with a last axis of 2 (real, imaginary); a real signal may have a last axis of 1.
//
// DFT: x [outer..., L, inner..., 1|2] transformed along `axis` with `length` points (the
// signal cut or zero-padded to it) -> y [..., bins, ..., 2], bins = length / 2 + 1 when
// `onesided`, else length; `inverse` conjugates the twiddles and scales by 1 / length.
// inverse + onesided is numpy's irfft: the input holds bins 0..length/2 of a Hermitian
// spectrum (cut or zero-padded to length/2 + 1, the imaginary parts of bin 0 and, for an
// even length, of bin length/2 ignored), the result [..., length, ..., 1] is real.
// STFT: signal [B, T, 1|2], optional window [frame_length] -> y [B, frames, bins, 2], frame
// f the points f * frame_step + [0, frame_length) times the window.
// The semantics are the ref target's (python/graphkiln/targets/ref/signal.py). A length
// that is a power of two runs a radix-2 FFT, any other a direct DFT on a twiddle table.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

using Complex = std::complex<double>;
constexpr int64_t kParallelWork = 1 << 15;  // line points * length before using threads

bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// One transform of `n` points: out[k] = sum_t z[t] exp(sign 2 pi i k t / n), sign -1
// forward and +1 inverse (unscaled).
class LineTransform {
 public:
  LineTransform(int64_t n, bool inverse) : n_(n), radix2_(is_power_of_two(n)) {
    const double sign = inverse ? 1.0 : -1.0;
    const double step = 2.0 * M_PI / static_cast<double>(n);
    twiddles_.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const double angle = step * static_cast<double>(j);
      twiddles_[j] = Complex(std::cos(angle), sign * std::sin(angle));
    }
    if (radix2_) {
      int bits = 0;
      while ((int64_t{1} << bits) < n) ++bits;
      reversed_.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        int64_t r = 0;
        for (int b = 0; b < bits; ++b) r |= ((j >> b) & 1) << (bits - 1 - b);
        reversed_[j] = r;
      }
    }
  }

  int64_t size() const { return n_; }

  // z: n points, of which only the first `used` may be nonzero; out: n points, its first
  // `bins` the result (the others scratch).
  void apply(const Complex* z, int64_t used, Complex* out, int64_t bins) const {
    if (radix2_) {
      fft(z, out);
      return;
    }
    for (int64_t k = 0; k < bins; ++k) {
      Complex sum = 0.0;
      int64_t index = 0;  // k * t mod n
      for (int64_t t = 0; t < used; ++t) {
        sum += z[t] * twiddles_[index];
        index += k;
        if (index >= n_) index -= n_;
      }
      out[k] = sum;
    }
  }

 private:
  void fft(const Complex* z, Complex* out) const {
    for (int64_t j = 0; j < n_; ++j) out[reversed_[j]] = z[j];
    for (int64_t half = 1; half < n_; half *= 2) {
      const int64_t stride = n_ / (2 * half);
      for (int64_t start = 0; start < n_; start += 2 * half) {
        for (int64_t j = 0; j < half; ++j) {
          const Complex odd = out[start + half + j] * twiddles_[j * stride];
          const Complex even = out[start + j];
          out[start + j] = even + odd;
          out[start + half + j] = even - odd;
        }
      }
    }
  }

  int64_t n_;
  bool radix2_;
  std::vector<Complex> twiddles_;
  std::vector<int64_t> reversed_;
};

bool float_dtype(DType t) { return t == DType::f32 || t == DType::f64; }

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// ---- DFT -----------------------------------------------------------------------------------
struct DftShape {
  int64_t outer, in_len, inner, in_parts, bins, out_parts;
  bool irfft;
  double scale;
};

template <typename T>
class DftKernel : public Kernel {
 public:
  DftKernel(const DftShape& shape, int64_t length, bool inverse)
      : s_(shape), transform_(length, inverse) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    T* y = static_cast<T*>(outputs[0]);
    const int64_t lines = s_.outer * s_.inner, n = transform_.size();
#pragma omp parallel if (lines * n * n > kParallelWork && lines > 1)
    {
      std::vector<Complex> z(static_cast<size_t>(n)), out(static_cast<size_t>(n));
#pragma omp for schedule(static)
      for (int64_t line = 0; line < lines; ++line) run_line(x, y, line, z.data(), out.data());
    }
  }

 private:
  Complex read(const T* x, int64_t o, int64_t t, int64_t i) const {
    const T* p = x + ((o * s_.in_len + t) * s_.inner + i) * s_.in_parts;
    return Complex(static_cast<double>(p[0]), s_.in_parts == 2 ? static_cast<double>(p[1]) : 0.0);
  }

  void run_line(const T* x, T* y, int64_t line, Complex* z, Complex* out) const {
    const int64_t o = line / s_.inner, i = line % s_.inner, n = transform_.size();
    int64_t used = n;
    if (s_.irfft) {
      // the Hermitian spectrum of a real signal from its bins 0..n/2
      const int64_t given = std::min(s_.in_len, n / 2 + 1);
      for (int64_t k = 0; k < n; ++k) z[k] = k < given ? read(x, o, k, i) : Complex(0.0);
      z[0].imag(0.0);
      if (n % 2 == 0) z[n / 2].imag(0.0);
      for (int64_t k = 1; k < (n + 1) / 2; ++k) z[n - k] = std::conj(z[k]);
    } else {
      used = std::min(s_.in_len, n);
      for (int64_t t = 0; t < used; ++t) z[t] = read(x, o, t, i);
      for (int64_t t = used; t < n; ++t) z[t] = 0.0;
    }
    transform_.apply(z, used, out, s_.bins);
    for (int64_t k = 0; k < s_.bins; ++k) {
      T* p = y + ((o * s_.bins + k) * s_.inner + i) * s_.out_parts;
      p[0] = static_cast<T>(out[k].real() * s_.scale);
      if (s_.out_parts == 2) p[1] = static_cast<T>(out[k].imag() * s_.scale);
    }
  }

  DftShape s_;
  LineTransform transform_;
};

std::unique_ptr<Kernel> make_dft(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) spec_error(spec, "takes one input");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  if (!float_dtype(x.dtype) || y.dtype != x.dtype) spec_error(spec, "float32 or float64 only");
  if (!x.is_contiguous() || !y.is_contiguous()) spec_error(spec, "plain tensors only");
  const int64_t rank = x.rank(), axis = spec.attrs.get_int("axis");
  const int64_t length = spec.attrs.get_int("length");
  const bool inverse = spec.attrs.get_int("inverse") != 0;
  const bool onesided = spec.attrs.get_int("onesided") != 0;
  if (rank < 2 || axis < 0 || axis > rank - 2) spec_error(spec, "axis out of range");
  if (x.dims.back() != 1 && x.dims.back() != 2) spec_error(spec, "last dim must be 1 or 2");
  if (length < 1) spec_error(spec, "length must be positive");
  DftShape s;
  s.outer = product(x.dims, 0, axis);
  s.in_len = x.dims[axis];
  s.inner = product(x.dims, axis + 1, rank - 1);
  s.in_parts = x.dims.back();
  s.irfft = inverse && onesided;
  s.bins = s.irfft ? length : onesided ? length / 2 + 1 : length;
  s.out_parts = s.irfft ? 1 : 2;
  s.scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  std::vector<int64_t> expected = x.dims;
  expected[axis] = s.bins;
  expected.back() = s.out_parts;
  if (y.dims != expected) spec_error(spec, "output dims do not match the transform");
  if (x.dtype == DType::f64) return std::make_unique<DftKernel<double>>(s, length, inverse);
  return std::make_unique<DftKernel<float>>(s, length, inverse);
}

// ---- STFT ----------------------------------------------------------------------------------
struct StftShape {
  int64_t batch, in_len, in_parts, frames, step, bins;
};

template <typename T>
class StftKernel : public Kernel {
 public:
  StftKernel(const StftShape& shape, int64_t frame) : s_(shape), transform_(frame, false) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    const T* window = static_cast<const T*>(inputs[1]);  // null when absent
    T* y = static_cast<T*>(outputs[0]);
    const int64_t lines = s_.batch * s_.frames, n = transform_.size();
#pragma omp parallel if (lines * n * n > kParallelWork && lines > 1)
    {
      std::vector<Complex> z(static_cast<size_t>(n)), out(static_cast<size_t>(n));
#pragma omp for schedule(static)
      for (int64_t line = 0; line < lines; ++line) {
        const int64_t b = line / s_.frames, f = line % s_.frames;
        const T* p = x + (b * s_.in_len + f * s_.step) * s_.in_parts;
        for (int64_t t = 0; t < n; ++t) {
          const double im = s_.in_parts == 2 ? static_cast<double>(p[t * 2 + 1]) : 0.0;
          z[t] = Complex(static_cast<double>(p[t * s_.in_parts]), im);
          if (window) z[t] *= static_cast<double>(window[t]);
        }
        transform_.apply(z.data(), n, out.data(), s_.bins);
        T* q = y + line * s_.bins * 2;
        for (int64_t k = 0; k < s_.bins; ++k) {
          q[2 * k] = static_cast<T>(out[k].real());
          q[2 * k + 1] = static_cast<T>(out[k].imag());
        }
      }
    }
  }

 private:
  StftShape s_;
  LineTransform transform_;
};

std::unique_ptr<Kernel> make_stft(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1)
    spec_error(spec, "takes signal and window");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  const bool has_window = spec.present.size() > 1 && spec.present[1];
  if (!float_dtype(x.dtype) || y.dtype != x.dtype) spec_error(spec, "float32 or float64 only");
  if (has_window && spec.inputs[1].dtype != x.dtype) spec_error(spec, "window of another dtype");
  if (!x.is_contiguous() || !y.is_contiguous()) spec_error(spec, "plain tensors only");
  if (x.rank() != 3 || (x.dims[2] != 1 && x.dims[2] != 2))
    spec_error(spec, "signal must be [batch, length, 1 or 2]");
  const int64_t frame = spec.attrs.get_int("frame_length");
  const int64_t step = spec.attrs.get_int("frame_step");
  const bool onesided = spec.attrs.get_int("onesided") != 0;
  if (frame < 1 || step < 1 || frame > x.dims[1]) spec_error(spec, "bad frame length or step");
  if (has_window && spec.inputs[1].numel() != frame) spec_error(spec, "window length differs");
  StftShape s{x.dims[0], x.dims[1],
              x.dims[2], (x.dims[1] - frame) / step + 1,
              step,      onesided ? frame / 2 + 1 : frame};
  if (y.dims != std::vector<int64_t>{s.batch, s.frames, s.bins, 2})
    spec_error(spec, "output dims do not match the frames");
  if (x.dtype == DType::f64) return std::make_unique<StftKernel<double>>(s, frame);
  return std::make_unique<StftKernel<float>>(s, frame);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("DFT", make_dft);
GRAPHKILN_REGISTER_KERNEL("STFT", make_stft);

}  // namespace graphkiln
