// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "GridSample": x [N, C, spatial...] (1 to 3 spatial dims) sampled at grid [N, out..., r]
// (grid[..., 0] indexes the innermost axis) -> y [N, C, out...]. x / y float32 or float64,
// grid float32 or float64. attrs: mode (linear | nearest | cubic, A = -0.75), padding_mode
// (zeros | border | reflection), align_corners (0 | 1).
//
// The same arithmetic as the ref target's GridSample (python/graphkiln/targets/ref/image.py):
// per spatial axis a table of taps (index, weight) computed in double from the grid
// coordinate (nearest: np.rint, round half to even; reflection: numpy's mod), the weight of a
// tap combination the product of its axes' weights (outer axis first) in double, rounded
// to the data type, and y the sum over the combinations (outer axis first, in the data
// type). Parallel over tiles of output points; the taps of a tile live on the stack.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

enum class Mode { linear, nearest, cubic };
enum class Padding { zeros, border, reflection };

constexpr int kMaxAxes = 3;
constexpr int kMaxTaps = 4;
constexpr int kMaxCombos = 64;  // 4 taps ^ 3 axes
constexpr int64_t kTile = 16;   // output points per tile
constexpr int64_t kParallelWork = 32768;

// numpy's float mod (the result has the divisor's sign)
double np_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0.0) {
    if ((b < 0.0) != (m < 0.0)) m += b;
  } else {
    m = std::copysign(0.0, b);
  }
  return m;
}

double reflect(double x, double lo, double hi) {
  const double span = hi - lo;
  if (span <= 0.0) return lo;
  const double d = np_mod(x - lo, 2.0 * span);
  return lo + (d > span ? 2.0 * span - d : d);
}

double cubic(double t, double a) {
  t = std::fabs(t);
  if (t <= 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  if (t < 2.0) return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
  return 0.0;
}

// the taps of one axis at grid coordinate `coord`; returns their count
int axis_taps(double coord, int64_t size, Mode mode, Padding pad, bool align, int64_t* index,
              double* weight) {
  double x, lo, hi;
  const double s = static_cast<double>(size);
  if (align) {
    x = (coord + 1.0) / 2.0 * (s - 1.0);
    lo = 0.0;
    hi = s - 1.0;
  } else {
    x = ((coord + 1.0) * s - 1.0) / 2.0;
    lo = -0.5;
    hi = s - 0.5;
  }
  if (pad == Padding::border && mode != Mode::cubic)
    x = std::min(std::max(x, 0.0), s - 1.0);  // cubic clamps each tap instead
  else if (pad == Padding::reflection) x = reflect(x, lo, hi);
  double at[kMaxTaps];
  int taps;
  if (mode == Mode::nearest) {
    taps = 1;
    at[0] = std::nearbyint(x);
    weight[0] = 1.0;
  } else {
    const double base = std::floor(x);
    taps = mode == Mode::linear ? 2 : 4;
    const double first = mode == Mode::linear ? 0.0 : -1.0;
    for (int k = 0; k < taps; ++k) {
      at[k] = base + (first + k);
      const double dist = at[k] - x;
      weight[k] = mode == Mode::linear ? std::min(std::max(1.0 - std::fabs(dist), 0.0), 1.0)
                                       : cubic(dist, -0.75);
    }
  }
  for (int k = 0; k < taps; ++k) {
    double i = at[k];
    if (pad == Padding::zeros) {
      if (!(i >= 0.0 && i <= s - 1.0)) weight[k] = 0.0;
    } else if (pad == Padding::reflection) {
      i = std::nearbyint(reflect(i, lo, hi));
    }
    i = std::isnan(i) ? 0.0 : std::min(std::max(i, 0.0), s - 1.0);
    index[k] = static_cast<int64_t>(i);
  }
  return taps;
}

template <typename T, typename G>
class GridSampleKernel : public Kernel {
 public:
  GridSampleKernel(const KernelSpec& spec, Mode mode, Padding pad, bool align)
      : mode_(mode), pad_(pad), align_(align) {
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& g = spec.inputs[1];
    axes_ = x.rank() - 2;
    n_ = x.dims[0];
    c_ = x.dims[1];
    for (int j = 0; j < kMaxAxes; ++j) size_[j] = 1, stride_[j] = 0;
    // the axes right-aligned in the three slots; unused front slots take one tap of index 0
    const int front = kMaxAxes - axes_;
    int64_t stride = 1;
    for (int j = kMaxAxes - 1; j >= front; --j) {
      size_[j] = x.dims[2 + j - front];
      stride_[j] = stride;
      stride *= size_[j];
    }
    in_plane_ = stride;
    points_ = 1;
    for (int j = 1; j < g.rank() - 1; ++j) points_ *= g.dims[j];
    const int per_axis = mode == Mode::nearest ? 1 : mode == Mode::linear ? 2 : 4;
    combos_ = 1;
    for (int j = 0; j < axes_; ++j) combos_ *= per_axis;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const T* x = static_cast<const T*>(inputs[0]);
    const G* grid = static_cast<const G*>(inputs[1]);
    T* y = static_cast<T*>(outputs[0]);
    const int64_t tiles_per_n = (points_ + kTile - 1) / kTile;
    const int64_t tiles = n_ * tiles_per_n;
    const int64_t work = n_ * c_ * points_ * combos_;
#pragma omp parallel for schedule(static) if (work > kParallelWork)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t n = t / tiles_per_n, p0 = (t % tiles_per_n) * kTile;
      const int64_t count = std::min(kTile, points_ - p0);
      int64_t index[kTile][kMaxCombos];
      T weight[kTile][kMaxCombos];
      for (int64_t q = 0; q < count; ++q)
        tile_taps(grid + (n * points_ + p0 + q) * axes_, index[q], weight[q]);
      for (int64_t c = 0; c < c_; ++c) {
        const T* xc = x + (n * c_ + c) * in_plane_;
        T* yc = y + (n * c_ + c) * points_ + p0;
        for (int64_t q = 0; q < count; ++q) {
          const int64_t* iq = index[q];
          const T* wq = weight[q];
          T acc = T(0);
          for (int k = 0; k < combos_; ++k) acc += xc[iq[k]] * wq[k];
          yc[q] = acc;
        }
      }
    }
  }

 private:
  // the flat indices and weights of every tap combination of one point, outer axis first
  void tile_taps(const G* point, int64_t* index, T* weight) const {
    int64_t ix[kMaxAxes][kMaxTaps];
    double w[kMaxAxes][kMaxTaps];
    int taps[kMaxAxes];
    const int front = kMaxAxes - axes_;
    for (int j = 0; j < kMaxAxes; ++j) {
      if (j < front) {
        taps[j] = 1, ix[j][0] = 0, w[j][0] = 1.0;
        continue;
      }
      const int axis = j - front;  // grid's last axis lists coordinates innermost first
      const double coord = static_cast<double>(point[axes_ - 1 - axis]);
      taps[j] = axis_taps(coord, size_[j], mode_, pad_, align_, ix[j], w[j]);
    }
    int k = 0;
    for (int a = 0; a < taps[0]; ++a)
      for (int b = 0; b < taps[1]; ++b)
        for (int c = 0; c < taps[2]; ++c) {
          index[k] = ix[0][a] * stride_[0] + ix[1][b] * stride_[1] + ix[2][c] * stride_[2];
          weight[k] = static_cast<T>(w[0][a] * w[1][b] * w[2][c]);
          ++k;
        }
  }

  Mode mode_;
  Padding pad_;
  bool align_;
  int axes_ = 0;
  int combos_ = 1;
  int64_t n_ = 0, c_ = 0, points_ = 0, in_plane_ = 1;
  int64_t size_[kMaxAxes], stride_[kMaxAxes];
};

std::unique_ptr<Kernel> make_grid_sample(const KernelSpec& spec) {
  if (spec.inputs.size() != 2 || spec.outputs.size() != 1) spec_error(spec, "takes X, grid -> Y");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& g = spec.inputs[1];
  const TensorInfo& y = spec.outputs[0];
  if (!x.is_contiguous() || !g.is_contiguous() || !y.is_contiguous())
    spec_error(spec, "plain data only");
  const int axes = x.rank() - 2;
  if (axes < 1 || axes > kMaxAxes) spec_error(spec, "1 to 3 spatial dims");
  if (g.rank() != axes + 2 || g.dims.back() != axes || g.dims[0] != x.dims[0])
    spec_error(spec, "grid must be [N, out..., spatial rank]");
  if (y.rank() != x.rank() || y.dims[0] != x.dims[0] || y.dims[1] != x.dims[1])
    spec_error(spec, "Y must be [N, C, out...]");
  for (int j = 0; j < axes; ++j) {
    if (y.dims[2 + j] != g.dims[1 + j]) spec_error(spec, "Y's spatial dims must be grid's");
    if (x.dims[2 + j] < 1 && y.numel() > 0) spec_error(spec, "empty input spatial dims");
  }
  const std::string m = spec.attrs.get_str("mode");
  const std::string p = spec.attrs.get_str("padding_mode");
  const int64_t align = spec.attrs.get_int("align_corners");
  Mode mode;
  if (m == "linear") mode = Mode::linear;
  else if (m == "nearest") mode = Mode::nearest;
  else if (m == "cubic") mode = Mode::cubic;
  else spec_error(spec, "mode must be linear, nearest or cubic");
  Padding pad;
  if (p == "zeros") pad = Padding::zeros;
  else if (p == "border") pad = Padding::border;
  else if (p == "reflection") pad = Padding::reflection;
  else spec_error(spec, "padding_mode must be zeros, border or reflection");
  if (align != 0 && align != 1) spec_error(spec, "align_corners must be 0 or 1");
  if (y.dtype != x.dtype) spec_error(spec, "Y must have X's type");
  const bool a = align != 0;
  if (x.dtype == DType::f32 && g.dtype == DType::f32)
    return std::make_unique<GridSampleKernel<float, float>>(spec, mode, pad, a);
  if (x.dtype == DType::f32 && g.dtype == DType::f64)
    return std::make_unique<GridSampleKernel<float, double>>(spec, mode, pad, a);
  if (x.dtype == DType::f64 && g.dtype == DType::f32)
    return std::make_unique<GridSampleKernel<double, float>>(spec, mode, pad, a);
  if (x.dtype == DType::f64 && g.dtype == DType::f64)
    return std::make_unique<GridSampleKernel<double, double>>(spec, mode, pad, a);
  spec_error(spec, "X and grid must be float32 or float64");
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("GridSample", make_grid_sample);

}  // namespace graphkiln
