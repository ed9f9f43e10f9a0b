// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "MelWeightMatrix": the [dft_length / 2 + 1, num_mel_bins] matrix of triangular mel
// filters, from the run-time band edges lower_edge_hertz and upper_edge_hertz (inputs,
// float32 / float64 scalars); attrs num_mel_bins, dft_length, sample_rate. In double, then
// rounded to the output type (float32 / float64), with the ref target's arithmetic
// (python/graphkiln/targets/ref/signal.py): bands + 2 points evenly spaced on the mel scale
// snapped down to spectrum bins, each band rising from its left edge to its center and
// falling to its right edge.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

double hertz_to_mel(double f) { return 2595.0 * std::log10(1.0 + f / 700.0); }
double mel_to_hertz(double m) { return 700.0 * (std::pow(10.0, m / 2595.0) - 1.0); }

double read_scalar(const void* p, DType t) {
  return t == DType::f64 ? *static_cast<const double*>(p)
                         : static_cast<double>(*static_cast<const float*>(p));
}

template <typename T>
class MelWeightKernel : public Kernel {
 public:
  MelWeightKernel(const KernelSpec& spec)
      : bands_(spec.attrs.get_int("num_mel_bins")), n_fft_(spec.attrs.get_int("dft_length")),
        rate_(spec.attrs.get_int("sample_rate")), low_type_(spec.inputs[0].dtype),
        high_type_(spec.inputs[1].dtype) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const double low = hertz_to_mel(read_scalar(inputs[0], low_type_));
    const double high = hertz_to_mel(read_scalar(inputs[1], high_type_));
    std::vector<int64_t> edges(static_cast<size_t>(bands_ + 2));
    for (int64_t i = 0; i < bands_ + 2; ++i) {
      const double mel =
          low + static_cast<double>(i) * (high - low) / static_cast<double>(bands_ + 2);
      const double bin =
          static_cast<double>(n_fft_ + 1) * mel_to_hertz(mel) / static_cast<double>(rate_);
      edges[i] = static_cast<int64_t>(std::floor(bin));
    }
    T* y = static_cast<T*>(outputs[0]);
    const int64_t bins = n_fft_ / 2 + 1;
    for (int64_t j = 0; j < bins; ++j) {
      for (int64_t b = 0; b < bands_; ++b) {
        const int64_t left = edges[b], center = edges[b + 1], right = edges[b + 2];
        double rising = static_cast<double>(j - left) /
                        static_cast<double>(std::max<int64_t>(center - left, 1));
        if (center == left) rising = j == center ? 1.0 : 0.0;
        const double falling = static_cast<double>(right - j) /
                               static_cast<double>(std::max<int64_t>(right - center, 1));
        double value = (j >= left && j <= center) ? rising : 0.0;
        if (j >= center && j < right) value = falling;
        y[j * bands_ + b] = static_cast<T>(value);
      }
    }
  }

 private:
  int64_t bands_, n_fft_, rate_;
  DType low_type_, high_type_;
};

bool float_dtype(DType t) { return t == DType::f32 || t == DType::f64; }

std::unique_ptr<Kernel> make_mel_weight(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1)
    spec_error(spec, "takes lower_edge_hertz and upper_edge_hertz");
  if (!float_dtype(spec.inputs[0].dtype) || !float_dtype(spec.inputs[1].dtype) ||
      spec.inputs[0].numel() != 1 || spec.inputs[1].numel() != 1)
    spec_error(spec, "band edges must be float32 / float64 scalars");
  const TensorInfo& y = spec.outputs[0];
  if (!float_dtype(y.dtype)) spec_error(spec, "float32 or float64 output only");
  const int64_t bands = spec.attrs.get_int("num_mel_bins");
  const int64_t n_fft = spec.attrs.get_int("dft_length");
  if (bands < 1 || n_fft < 1 || spec.attrs.get_int("sample_rate") < 1)
    spec_error(spec, "num_mel_bins, dft_length and sample_rate must be positive");
  if (y.dims != std::vector<int64_t>{n_fft / 2 + 1, bands})
    spec_error(spec, "output must be [dft_length / 2 + 1, num_mel_bins]");
  if (y.dtype == DType::f64) return std::make_unique<MelWeightKernel<double>>(spec);
  return std::make_unique<MelWeightKernel<float>>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("MelWeightMatrix", make_mel_weight);

}  // namespace graphkiln
