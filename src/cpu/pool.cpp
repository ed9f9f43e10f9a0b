// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Pooling. "Pool": MaxPool / AveragePool through oneDNN (attrs: algorithm = max |
// avg_include_padding | avg_exclude_padding, kernel_shape, strides, dilations, pads_begin,
// pads_end: explicit, ceil_mode already folded into pads_end by Python; f32, and u8 / s8 for
// max). "GlobalPool":
// mean or max over all spatial positions (attr mode = avg | max) of plain or channels-last
// data, a loop of our own.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/onednn_common.hpp"

namespace graphkiln {
namespace {

class PoolKernel : public Kernel {
 public:
  explicit PoolKernel(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& y = spec.outputs[0];
    size_t n = x.dims.size() - 2;
    std::string mode = spec.attrs.get_str("algorithm");
    dnnl::algorithm alg;
    if (mode == "max") alg = dnnl::algorithm::pooling_max;
    else if (mode == "avg_include_padding") alg = dnnl::algorithm::pooling_avg_include_padding;
    else if (mode == "avg_exclude_padding") alg = dnnl::algorithm::pooling_avg_exclude_padding;
    else spec_error(spec, "unknown pooling algorithm " + mode);
    auto kernel = spec.attrs.get_ints("kernel_shape");
    auto strides = spec.attrs.get_ints("strides", std::vector<int64_t>(n, 1));
    auto dilations = spec.attrs.get_ints("dilations", std::vector<int64_t>(n, 1));
    auto pb = spec.attrs.get_ints("pads_begin", std::vector<int64_t>(n, 0));
    auto pe = spec.attrs.get_ints("pads_end", std::vector<int64_t>(n, 0));
    if (kernel.size() != n || strides.size() != n || dilations.size() != n || pb.size() != n ||
        pe.size() != n)
      spec_error(spec, "window attributes do not match the spatial rank");
    dnnl::memory::dims k(kernel.begin(), kernel.end()), s(strides.begin(), strides.end()), d(n),
        b(pb.begin(), pb.end()), e(pe.begin(), pe.end());
    for (size_t i = 0; i < n; ++i) d[i] = dilations[i] - 1;

    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    auto make_pd = [&](const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
      return dnnl::pooling_forward::primitive_desc(
          onednn_engine(), dnnl::prop_kind::forward_inference, alg, src, dst, s, k, d, b, e, attr);
    };
    dnnl::memory::desc src_user = onednn_desc(x), dst_user = onednn_desc(y);
    dnnl::memory::desc src_md = src_user, dst_md = dst_user;
    dnnl::pooling_forward::primitive_desc pd;
    try {
      pd = make_pd(src_md, dst_md);
    } catch (const dnnl::error&) {
    }
    if (!pd || std::string(pd.impl_info_str()).find("ref") != std::string::npos) {
      // mixed or plain layouts oneDNN runs slowly: pool channels-last buffers of our own
      dnnl::memory::desc src_cl = onednn_desc(x.dtype, x.dims, channels_last_strides(x.dims));
      dnnl::memory::desc dst_cl = onednn_desc(y.dtype, y.dims, channels_last_strides(y.dims));
      try {
        auto alt = make_pd(src_cl, dst_cl);
        if (!pd || std::string(alt.impl_info_str()).find("ref") == std::string::npos) {
          pd = alt;
          src_md = src_cl;
          dst_md = dst_cl;
        }
      } catch (const dnnl::error&) {
      }
    }
    if (!pd) spec_error(spec, "oneDNN has no pooling for these arguments");
    prim_ = dnnl::pooling_forward(pd);
    auto& eng = onednn_engine();
    src_ = StagedMemory(src_user, src_md, false);
    dst_ = StagedMemory(dst_user, dst_md, true);
    scratchpad_ = dnnl::memory(pd.scratchpad_desc(), eng);
    args_[DNNL_ARG_SRC] = src_.arg();
    args_[DNNL_ARG_DST] = dst_.arg();
    args_[DNNL_ARG_SCRATCHPAD] = scratchpad_;
    if (std::getenv("GRAPHKILN_ONEDNN_IMPL"))
      std::fprintf(stderr, "Pool %s: %s%s%s\n", spec.name.c_str(), pd.impl_info_str(),
                   src_md != src_user ? " +src reorder" : "",
                   dst_md != dst_user ? " +dst reorder" : "");
  }

  void run(const void* const* inputs, void* const* outputs) override {
    src_.bind(inputs[0]);
    dst_.bind(outputs[0]);
    src_.before(stream_);
    prim_.execute(stream_, args_);
    dst_.after(stream_);
    stream_.wait();
  }

 private:
  dnnl::pooling_forward prim_;
  dnnl::stream stream_{onednn_engine()};
  StagedMemory src_, dst_;
  dnnl::memory scratchpad_;
  std::unordered_map<int, dnnl::memory> args_;
};

std::unique_ptr<Kernel> make_pool(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) spec_error(spec, "takes one input");
  const TensorInfo& x = spec.inputs[0];
  if (x.rank() < 3 || x.rank() > 5) spec_error(spec, "X must be 3-D to 5-D");
  // max pooling of quantized data: the same maximum, no arithmetic
  const bool int8_max = (x.dtype == DType::u8 || x.dtype == DType::i8) &&
                        spec.attrs.get_str("algorithm") == "max";
  if ((x.dtype != DType::f32 && !int8_max) || spec.outputs[0].dtype != x.dtype)
    spec_error(spec, "f32, or u8 / s8 for max pooling, the output of the input's type");
  return std::make_unique<PoolKernel>(spec);
}

// Global pooling: y[n, c] = mean or max of x[n, c, spatial...].
class GlobalPoolKernel : public Kernel {
 public:
  explicit GlobalPoolKernel(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& y = spec.outputs[0];
    max_ = spec.attrs.get_str("mode") == "max";
    batch_ = x.dims[0];
    channels_ = x.dims[1];
    spatial_ = 1;
    for (int i = 2; i < x.rank(); ++i) spatial_ *= x.dims[i];
    channels_last_ = x.is_channels_last() && !x.is_contiguous();
    x_batch_stride_ = x.strides[0];
    y_batch_stride_ = y.strides[0];
    y_channel_stride_ = y.strides[1];
    if (!channels_last_ && !x.is_contiguous())
      spec_error(spec, "input must be plain or channels-last");
    if (channels_last_ || x.dims[0] == 1) x_batch_stride_ = channels_ * spatial_;
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    if (channels_last_) run_channels_last(x, y);
    else run_plain(x, y);
  }

 private:
  void run_plain(const float* x, float* y) {
    const int64_t rows = batch_ * channels_, hw = spatial_, C = channels_;
    const bool is_max = max_;
    const float scale = 1.0f / static_cast<float>(hw);
#pragma omp parallel for if (rows * hw > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      const float* p = x + (r / C) * x_batch_stride_ + (r % C) * hw;
      float value;
      if (is_max) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < hw; ++i) m = std::max(m, p[i]);
        value = m;
      } else {
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 8 <= hw; i += 8)
          for (int j = 0; j < 8; ++j) acc[j] += p[i + j];
        float s = 0;
        for (; i < hw; ++i) s += p[i];
        for (int j = 0; j < 8; ++j) s += acc[j];
        value = s * scale;
      }
      y[(r / C) * y_batch_stride_ + (r % C) * y_channel_stride_] = value;
    }
  }

  // Each task sums (or takes the maximum of) a range of pixels of one image for a group of
  // up to kGroup channels, 32 channels at a time (then 8, then 1), into its part of a row of
  // partial results; the rows of an image's ranges are then combined. Two tasks a thread
  // where the tensor is large enough: channel groups first, then ranges of at least
  // kMinPixels pixels, so that a squeeze-and-excitation block's pool of a few channels over
  // many pixels spreads over the threads as well as a wide one.
  void run_channels_last(const float* x, float* y) {
    constexpr int64_t kGroup = 128, kMinPixels = 64;
    const int64_t C = channels_, hw = spatial_;
    const bool is_max = max_, parallel = batch_ * C * hw > 32768;
    const int64_t wanted = parallel ? 2 * static_cast<int64_t>(omp_get_max_threads()) : 1;
    const int64_t groups = (C + kGroup - 1) / kGroup;
    int64_t ranges = std::max<int64_t>(1, (wanted + batch_ * groups - 1) / (batch_ * groups));
    ranges = std::min(ranges, std::max<int64_t>(1, hw / kMinPixels));
    const int64_t per_range = (hw + ranges - 1) / ranges;
    ranges = (hw + per_range - 1) / per_range;
    thread_local std::vector<float> partial;  // of the calling thread: concurrent runs apart
    partial.resize(static_cast<size_t>(batch_ * ranges * C));
    float* rows = partial.data();
    const int64_t tasks = batch_ * ranges * groups;
#pragma omp parallel for if (parallel && tasks > 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t g = t % groups, image_range = t / groups;  // image_range: n * ranges + r
      const int64_t n = image_range / ranges, i0 = (image_range % ranges) * per_range;
      const int64_t i1 = std::min(hw, i0 + per_range);
      const int64_t c1 = std::min(C, (g + 1) * kGroup);
      const float* image = x + n * x_batch_stride_;
      float* out = rows + image_range * C;
      int64_t c0 = g * kGroup;
      for (; c0 + 32 <= c1; c0 += 32) accumulate<32>(image + c0, C, i0, i1, is_max, out + c0);
      for (; c0 + 8 <= c1; c0 += 8) accumulate<8>(image + c0, C, i0, i1, is_max, out + c0);
      for (; c0 < c1; ++c0) accumulate<1>(image + c0, C, i0, i1, is_max, out + c0);
    }
    const float scale = 1.0f / static_cast<float>(hw);
    for (int64_t n = 0; n < batch_; ++n) {
      float* out = y + n * y_batch_stride_;
      for (int64_t c = 0; c < C; ++c) {
        float v = rows[n * ranges * C + c];
        for (int64_t r = 1; r < ranges; ++r) {
          const float w = rows[(n * ranges + r) * C + c];
          v = is_max ? std::max(v, w) : v + w;
        }
        out[c * y_channel_stride_] = is_max ? v : v * scale;
      }
    }
  }

  // W channels (a compile-time width, so that the accumulators stay in registers) of pixels
  // [i0, i1): pixel i's values at base[i * C]
  template <int64_t W>
  static void accumulate(const float* base, int64_t C, int64_t i0, int64_t i1, bool is_max,
                         float* out) {
    float acc[W];
    for (int64_t c = 0; c < W; ++c) acc[c] = is_max ? -std::numeric_limits<float>::infinity() : 0;
    if (is_max) {
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t c = 0; c < W; ++c) acc[c] = std::max(acc[c], base[i * C + c]);
    } else {
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t c = 0; c < W; ++c) acc[c] += base[i * C + c];
    }
    for (int64_t c = 0; c < W; ++c) out[c] = acc[c];
  }

  bool max_ = false, channels_last_ = false;
  int64_t batch_ = 0, channels_ = 0, spatial_ = 0;
  int64_t x_batch_stride_ = 0, y_batch_stride_ = 0, y_channel_stride_ = 0;
};

std::unique_ptr<Kernel> make_global_pool(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1) spec_error(spec, "takes one input");
  const TensorInfo& x = spec.inputs[0];
  if (x.rank() < 3) spec_error(spec, "X must have a spatial axis");
  if (x.dtype != DType::f32 || spec.outputs[0].dtype != DType::f32)
    spec_error(spec, "only f32 is supported");
  std::string mode = spec.attrs.get_str("mode");
  if (mode != "avg" && mode != "max") spec_error(spec, "mode must be avg or max");
  return std::make_unique<GlobalPoolKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Pool", make_pool);
GRAPHKILN_REGISTER_KERNEL("GlobalPool", make_global_pool);

}  // namespace graphkiln
