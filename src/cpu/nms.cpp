// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// NonMaxSuppression of float32 boxes [B, N, 4] and scores [B, C, N]: per batch and class,
// boxes by descending score (ties: the lower index first; NaN scores last), those under
// score_threshold dropped, each kept unless its IoU with a kept one exceeds iou_threshold,
// at most max_output_boxes_per_class (read at run time, as are the thresholds). IoU in
// double, as the ref target computes it. The output has the plan's bound of rows
// (`capacity`, from the lowering): the selected (batch, class, box) triples first, every
// row after them -1; the cpu target cuts it there (targets/cpu/segments.py: outputs of
// dims decided at run time).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class NmsKernel : public Kernel {
 public:
  explicit NmsKernel(const KernelSpec& spec)
      : name_(spec.name), center_(spec.attrs.get_int("center_point_box") != 0),
        has_limit_(spec.has_input(2)), has_iou_(spec.has_input(3)), has_score_(spec.has_input(4)) {
    batch_ = spec.inputs[1].dims[0];
    classes_ = spec.inputs[1].dims[1];
    boxes_ = spec.inputs[1].dims[2];
    capacity_ = spec.outputs[0].dims[0];
    corners_.resize(static_cast<size_t>(boxes_) * 4);
    area_.resize(static_cast<size_t>(boxes_));
    order_.resize(static_cast<size_t>(boxes_));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* boxes = static_cast<const float*>(inputs[0]);
    const float* scores = static_cast<const float*>(inputs[1]);
    const int64_t limit = has_limit_ ? static_cast<const int64_t*>(inputs[2])[0] : 0;
    const double iou_max = has_iou_ ? static_cast<const float*>(inputs[3])[0] : 0.0;
    const double score_min = has_score_ ? static_cast<const float*>(inputs[4])[0] : 0.0;
    auto* out = static_cast<int64_t*>(outputs[0]);
    int64_t rows = 0;
    std::vector<int64_t> kept;
    for (int64_t b = 0; b < batch_ && limit > 0; ++b) {
      corners(boxes + b * boxes_ * 4);
      for (int64_t c = 0; c < classes_; ++c) {
        const float* s = scores + (b * classes_ + c) * boxes_;
        std::iota(order_.begin(), order_.end(), 0);
        auto real = std::stable_partition(order_.begin(), order_.end(),
                                          [&](int64_t i) { return !std::isnan(s[i]); });
        std::stable_sort(order_.begin(), real, [&](int64_t i, int64_t j) { return s[i] > s[j]; });
        kept.clear();
        for (int64_t i : order_) {
          if (static_cast<int64_t>(kept.size()) >= limit) break;
          if (has_score_ && !(static_cast<double>(s[i]) >= score_min)) continue;
          bool keep = true;
          for (int64_t k : kept)
            if (iou(i, k) > iou_max) {
              keep = false;
              break;
            }
          if (keep) kept.push_back(i);
        }
        if (rows + static_cast<int64_t>(kept.size()) > capacity_)
          throw std::length_error("NonMaxSuppression '" + name_ + "': more than " +
                                  std::to_string(capacity_) + " boxes selected");
        for (int64_t i : kept) {
          out[rows * 3] = b;
          out[rows * 3 + 1] = c;
          out[rows * 3 + 2] = i;
          ++rows;
        }
      }
    }
    std::fill(out + rows * 3, out + capacity_ * 3, int64_t{-1});
  }

 private:
  // (y_min, x_min, y_max, x_max) and area of batch entry's boxes
  void corners(const float* box) {
    for (int64_t i = 0; i < boxes_; ++i) {
      const double a = box[i * 4], b = box[i * 4 + 1], c = box[i * 4 + 2], d = box[i * 4 + 3];
      double* o = corners_.data() + i * 4;
      if (center_) {  // (x_center, y_center, width, height)
        o[0] = b - d / 2;
        o[1] = a - c / 2;
        o[2] = b + d / 2;
        o[3] = a + c / 2;
      } else {
        o[0] = std::min(a, c);
        o[1] = std::min(b, d);
        o[2] = std::max(a, c);
        o[3] = std::max(b, d);
      }
      area_[i] = (o[2] - o[0]) * (o[3] - o[1]);
    }
  }

  double iou(int64_t i, int64_t j) const {
    const double* p = corners_.data() + i * 4;
    const double* q = corners_.data() + j * 4;
    const double h = std::max(std::min(p[2], q[2]) - std::max(p[0], q[0]), 0.0);
    const double w = std::max(std::min(p[3], q[3]) - std::max(p[1], q[1]), 0.0);
    const double inter = h * w;
    const double uni = area_[i] + area_[j] - inter;
    return uni > 0 ? inter / uni : 0.0;
  }

  std::string name_;
  bool center_, has_limit_, has_iou_, has_score_;
  int64_t batch_, classes_, boxes_, capacity_;
  std::vector<double> corners_, area_;
  std::vector<int64_t> order_;
};

std::unique_ptr<Kernel> make_nms(const KernelSpec& spec) {
  if (spec.inputs.size() < 2 || spec.inputs.size() > 5 || spec.outputs.size() != 1)
    spec_error(spec, "takes boxes, scores and up to three optional scalars");
  const TensorInfo& boxes = spec.inputs[0];
  const TensorInfo& scores = spec.inputs[1];
  const TensorInfo& out = spec.outputs[0];
  if (boxes.dtype != DType::f32 || scores.dtype != DType::f32)
    spec_error(spec, "boxes and scores must be f32");
  if (boxes.rank() != 3 || boxes.dims[2] != 4 || scores.rank() != 3 ||
      scores.dims[0] != boxes.dims[0] || scores.dims[2] != boxes.dims[1])
    spec_error(spec, "boxes [B, N, 4] and scores [B, C, N]");
  if (out.dtype != DType::i64 || out.rank() != 2 || out.dims[1] != 3)
    spec_error(spec, "output must be i64 [capacity, 3]");
  if (spec.has_input(2) && (spec.inputs[2].dtype != DType::i64 || spec.inputs[2].numel() < 1))
    spec_error(spec, "max_output_boxes_per_class must be an i64 scalar");
  for (size_t i = 3; i < spec.inputs.size(); ++i)
    if (spec.has_input(i) && (spec.inputs[i].dtype != DType::f32 || spec.inputs[i].numel() < 1))
      spec_error(spec, "thresholds must be f32 scalars");
  if (!boxes.is_contiguous() || !scores.is_contiguous() || !out.is_contiguous())
    spec_error(spec, "plain tensors only");
  return std::make_unique<NmsKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("NonMaxSuppression", make_nms);

}  // namespace graphkiln
