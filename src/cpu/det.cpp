// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Det of float32 / float64 matrices [..., M, M]: per matrix an LU factorization with
// partial pivoting (the largest |value| of the column, as LAPACK's getrf) in double, the
// determinant the product of the pivots with the sign of the row swaps (0 once a column
// has no non-zero pivot; 1 for M = 0), rounded to the input's dtype.
#include <cmath>
#include <utility>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class DetKernel : public Kernel {
 public:
  explicit DetKernel(const KernelSpec& spec)
      : f64_(spec.inputs[0].dtype == DType::f64), m_(spec.inputs[0].dims.back()),
        batch_(spec.outputs[0].numel()), lu_(static_cast<size_t>(m_ * m_)) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const int64_t size = m_ * m_;
    for (int64_t b = 0; b < batch_; ++b) {
      for (int64_t i = 0; i < size; ++i)
        lu_[i] = f64_ ? static_cast<const double*>(inputs[0])[b * size + i]
                      : static_cast<const float*>(inputs[0])[b * size + i];
      const double det = determinant();
      if (f64_) static_cast<double*>(outputs[0])[b] = det;
      else static_cast<float*>(outputs[0])[b] = static_cast<float>(det);
    }
  }

 private:
  double determinant() {
    double det = 1.0;
    for (int64_t c = 0; c < m_; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < m_; ++r)
        if (std::fabs(lu_[r * m_ + c]) > std::fabs(lu_[pivot * m_ + c])) pivot = r;
      const double p = lu_[pivot * m_ + c];
      if (p == 0.0) return 0.0;
      if (pivot != c) {
        for (int64_t k = 0; k < m_; ++k) std::swap(lu_[c * m_ + k], lu_[pivot * m_ + k]);
        det = -det;
      }
      det *= p;
      for (int64_t r = c + 1; r < m_; ++r) {
        const double f = lu_[r * m_ + c] / p;
        if (f == 0.0) continue;
        for (int64_t k = c + 1; k < m_; ++k) lu_[r * m_ + k] -= f * lu_[c * m_ + k];
      }
    }
    return det;
  }

  bool f64_;
  int64_t m_, batch_;
  std::vector<double> lu_;
};

std::unique_ptr<Kernel> make_det(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) spec_error(spec, "takes X; makes Y");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  if (x.dtype != DType::f32 && x.dtype != DType::f64) spec_error(spec, "X must be f32 or f64");
  if (x.rank() < 2 || x.dims[x.rank() - 1] != x.dims[x.rank() - 2])
    spec_error(spec, "X must be [..., M, M]");
  if (y.dtype != x.dtype || y.rank() != x.rank() - 2) spec_error(spec, "Y must be X's [...]");
  for (int d = 0; d < y.rank(); ++d)
    if (y.dims[d] != x.dims[d]) spec_error(spec, "Y must be X's [...]");
  if (!x.is_contiguous()) spec_error(spec, "plain tensors only");
  return std::make_unique<DetKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Det", make_det);

}  // namespace graphkiln
