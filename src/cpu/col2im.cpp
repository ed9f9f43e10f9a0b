// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Col2Im": columns x [N, C * prod(block), L] summed back into an image y [N, C, image...]
// (any number of spatial dims). attrs: image, block, dilations, strides (one per spatial
// dim), pads (begin..., end...). Block position p (L = prod of the per-axis counts) and tap
// t land at image coordinate p * stride + t * dilation - pad_begin per axis; those outside
// the image are dropped. float32 / float64, summed in the data type with the taps in order
// (the ref target's scatter_taps in python/graphkiln/targets/ref/conv.py). Where each
// (tap, position) lands is a table made once; run() is parallel over the N * C images.
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kParallelWork = 1 << 16;

template <typename T>
class Col2ImKernel : public Kernel {
 public:
  Col2ImKernel(int64_t images, int64_t image_size, std::vector<int64_t> landing)
      : images_(images), image_size_(image_size), landing_(std::move(landing)) {}

  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    T* y = static_cast<T*>(outputs[0]);
    const int64_t cols = static_cast<int64_t>(landing_.size()), size = image_size_;
    const int64_t* land = landing_.data();
#pragma omp parallel for schedule(static) if (images_ * cols > kParallelWork && images_ > 1)
    for (int64_t img = 0; img < images_; ++img) {
      T* out = y + img * size;
      const T* in = x + img * cols;
      std::memset(out, 0, static_cast<size_t>(size) * sizeof(T));
      for (int64_t j = 0; j < cols; ++j)
        if (land[j] >= 0) out[land[j]] += in[j];
    }
  }

 private:
  int64_t images_, image_size_;
  std::vector<int64_t> landing_;  // (tap, position) -> offset in the image, -1 outside
};

// the image offset of every (tap, block position) pair, taps outer, or -1 outside
std::vector<int64_t> landing_table(const std::vector<int64_t>& image,
                                   const std::vector<int64_t>& block,
                                   const std::vector<int64_t>& counts,
                                   const std::vector<int64_t>& dilations,
                                   const std::vector<int64_t>& strides,
                                   const std::vector<int64_t>& pads_begin) {
  const size_t n = image.size();
  int64_t taps = 1, positions = 1;
  for (size_t a = 0; a < n; ++a) taps *= block[a], positions *= counts[a];
  std::vector<int64_t> table(static_cast<size_t>(taps * positions));
  std::vector<int64_t> tap(n), pos(n);
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t r = t, a = static_cast<int64_t>(n) - 1; a >= 0; --a)
      tap[a] = r % block[a], r /= block[a];
    for (int64_t p = 0; p < positions; ++p) {
      for (int64_t r = p, a = static_cast<int64_t>(n) - 1; a >= 0; --a)
        pos[a] = r % counts[a], r /= counts[a];
      int64_t offset = 0;
      for (size_t a = 0; a < n && offset >= 0; ++a) {
        const int64_t at = pos[a] * strides[a] + tap[a] * dilations[a] - pads_begin[a];
        offset = (at < 0 || at >= image[a]) ? -1 : offset * image[a] + at;
      }
      table[t * positions + p] = offset;
    }
  }
  return table;
}

std::unique_ptr<Kernel> make_col2im(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) spec_error(spec, "takes one input");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& y = spec.outputs[0];
  if ((x.dtype != DType::f32 && x.dtype != DType::f64) || y.dtype != x.dtype)
    spec_error(spec, "float32 or float64 only");
  if (!x.is_contiguous() || !y.is_contiguous()) spec_error(spec, "plain tensors only");
  const std::vector<int64_t> image = spec.attrs.get_ints("image");
  const std::vector<int64_t> block = spec.attrs.get_ints("block");
  const std::vector<int64_t> dilations = spec.attrs.get_ints("dilations");
  const std::vector<int64_t> strides = spec.attrs.get_ints("strides");
  const std::vector<int64_t> pads = spec.attrs.get_ints("pads");
  const size_t n = image.size();
  if (n < 1 || block.size() != n || dilations.size() != n || strides.size() != n ||
      pads.size() != 2 * n)
    spec_error(spec, "one image size, block size, dilation and stride per axis, two pads");
  int64_t taps = 1, positions = 1, image_size = 1;
  std::vector<int64_t> counts(n), pads_begin(pads.begin(), pads.begin() + n);
  for (size_t a = 0; a < n; ++a) {
    if (image[a] < 1 || block[a] < 1 || dilations[a] < 1 || strides[a] < 1)
      spec_error(spec, "sizes, dilations and strides must be positive");
    const int64_t span = image[a] + pads[a] + pads[a + n] - (block[a] - 1) * dilations[a] - 1;
    if (span < 0) spec_error(spec, "the block does not fit the padded image");
    counts[a] = span / strides[a] + 1;
    taps *= block[a], positions *= counts[a], image_size *= image[a];
  }
  if (x.rank() != 3 || x.dims[1] % taps != 0 || x.dims[2] != positions)
    spec_error(spec, "input must be [N, C * prod(block), prod(block counts)]");
  std::vector<int64_t> expected{x.dims[0], x.dims[1] / taps};
  expected.insert(expected.end(), image.begin(), image.end());
  if (y.dims != expected) spec_error(spec, "output dims must be [N, C, image...]");
  auto table = landing_table(image, block, counts, dilations, strides, pads_begin);
  const int64_t images = x.dims[0] * (x.dims[1] / taps);
  if (x.dtype == DType::f64)
    return std::make_unique<Col2ImKernel<double>>(images, image_size, std::move(table));
  return std::make_unique<Col2ImKernel<float>>(images, image_size, std::move(table));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Col2Im", make_col2im);

}  // namespace graphkiln
