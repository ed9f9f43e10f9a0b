// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The stem convolution kernel (stem_conv.hpp): checks that a Conv step is one it serves,
// packs the weights once ([C][KH][KW][K rounded up to 16], zeros past K), and runs the output
// rows of every image in parallel, each through the AVX-512 row loop (stem_conv_avx512.cpp).
// A chain closed by swish applies that last op to each row after it is written
// (swish_tail.hpp), while the row is still in the cache.
#include "cpu/stem_conv.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cpu/cpu_features.hpp"
#include "cpu/onednn_common.hpp"
#include "cpu/swish_tail.hpp"

namespace graphkiln {
namespace {

using stem::kLanes;
using stem::PostKind;
using stem::Problem;

constexpr int64_t kMaxChannels = 8;
// Below 24 maps oneDNN's kernel was as fast or faster (16 maps: 0.14 against 0.18 ms on one
// core of the Intel AVX-512 VM, tied on two; 24-64 maps: ours ahead on two cores, tied on one)
constexpr int64_t kMinMaps = 24;
// Packed weights above this many bytes leave the core's L2 between blocks of pixels (a ViT's
// 16x16 patches into 768 maps: 2.4 MB); oneDNN's GEMM-like kernels keep those.
constexpr int64_t kMaxPackedBytes = 128 << 10;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The post-op chain as the row loop applies it (swish only last, after the row); false where
// an op is not one it takes (the step then stays on oneDNN).
struct PostPlan {
  int count = 0;
  stem::PostOp ops[stem::kMaxPostOps];
  bool swish = false;
  float swish_alpha = 1.0f;
};

bool plan_post_ops(const KernelSpec& spec, PostPlan& plan) {
  if (!spec.attrs.has("post_ops")) return true;
  auto names = spec.attrs.get_strs("post_ops");
  const auto alpha = spec.attrs.get_floats("post_alpha");
  const auto beta = spec.attrs.get_floats("post_beta");
  const auto arg = spec.attrs.get_ints("post_arg");
  if (alpha.size() != names.size() || beta.size() != names.size() || arg.size() != names.size())
    return false;
  if (!names.empty() && names.back() == "swish") {
    plan.swish = true;
    plan.swish_alpha = static_cast<float>(alpha.back());
    names.pop_back();
  }
  if (names.size() > static_cast<size_t>(stem::kMaxPostOps)) return false;
  static const std::pair<const char*, PostKind> kinds[] = {{"relu", PostKind::relu},
                                                           {"clip", PostKind::clip},
                                                           {"linear", PostKind::linear},
                                                           {"hardswish", PostKind::hardswish},
                                                           {"hardsigmoid", PostKind::hardsigmoid}};
  for (size_t i = 0; i < names.size(); ++i) {
    bool known = false;
    for (const auto& [name, kind] : kinds)
      if (names[i] == name) {
        plan.ops[i].kind = kind;
        known = true;
      }
    if (!known || arg[i] >= 0) return false;
    plan.ops[i].alpha = static_cast<float>(alpha[i]);
    plan.ops[i].beta = static_cast<float>(beta[i]);
  }
  plan.count = static_cast<int>(names.size());
  return true;
}

// W (K, C, KH, KW) to [C][KH][KW][k_pad]
void pack_weights(const float* w, const Problem& p, float* out) {
  std::memset(out, 0, static_cast<size_t>(p.channels * p.kernel_h * p.kernel_w * p.k_pad) * 4);
  for (int64_t k = 0; k < p.maps; ++k)
    for (int64_t c = 0; c < p.channels; ++c)
      for (int64_t i = 0; i < p.kernel_h; ++i)
        for (int64_t j = 0; j < p.kernel_w; ++j)
          out[((c * p.kernel_h + i) * p.kernel_w + j) * p.k_pad + k] =
              w[((k * p.channels + c) * p.kernel_h + i) * p.kernel_w + j];
}

class StemConvKernel : public Kernel {
 public:
  StemConvKernel(const KernelSpec& spec, const PostPlan& post) : post_(post) {
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& w = spec.inputs[1];
    const TensorInfo& y = spec.outputs[0];
    const auto strides = spec.attrs.get_ints("strides", {1, 1});
    const auto pads = spec.attrs.get_ints("pads_begin", {0, 0});
    batch_ = x.dims[0];
    Problem& p = problem_;
    p.channels = x.dims[1];
    p.in_h = x.dims[2];
    p.in_w = x.dims[3];
    p.maps = y.dims[1];
    p.k_pad = round_up(p.maps, kLanes);
    p.kernel_h = w.dims[2];
    p.kernel_w = w.dims[3];
    p.stride_h = strides[0];
    p.stride_w = strides[1];
    p.pad_top = pads[0];
    p.pad_left = pads[1];
    p.out_h = y.dims[2];
    p.out_w = y.dims[3];
    p.interior_lo = std::min(p.out_w, (p.pad_left + p.stride_w - 1) / p.stride_w);
    const int64_t last = p.in_w + p.pad_left - p.kernel_w;  // the last window start inside
    p.interior_hi = last < 0 ? p.interior_lo
                             : std::clamp(last / p.stride_w + 1, p.interior_lo, p.out_w);
    const size_t packed = static_cast<size_t>(p.channels * p.kernel_h * p.kernel_w * p.k_pad);
    const std::string layout = "stem;k_pad=" + std::to_string(p.k_pad);
    const float* weights = static_cast<const float*>(w.constant);
    p.w = static_cast<const float*>(own_packed_constant(
        layout, packed * sizeof(float),
        [&](void* out) { pack_weights(weights, p, static_cast<float*>(out)); }, w_owner_));
    bias_.assign(static_cast<size_t>(p.k_pad), 0.0f);
    has_bias_ = spec.has_input(2);
    if (has_bias_ && spec.inputs[2].constant != nullptr) {
      std::memcpy(bias_.data(), spec.inputs[2].constant, static_cast<size_t>(p.maps) * 4);
      bias_is_constant_ = true;
    }
    p.bias = bias_.data();
    p.post_count = post_.count;
    for (int i = 0; i < post_.count; ++i) p.post[i] = post_.ops[i];
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const Problem& p = problem_;
    if (has_bias_ && !bias_is_constant_)
      std::memcpy(bias_.data(), inputs[2], static_cast<size_t>(p.maps) * sizeof(float));
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t rows = batch_ * p.out_h, image = p.channels * p.in_h * p.in_w;
    const int64_t row = p.out_w * p.maps;
    const std::vector<int64_t> row_dims{row}, row_strides{1};
    // a row is ~KH * KW * C * OW * K / 16 multiply-adds: worth a thread from a few rows on
    const bool parallel = rows > 1 && rows * row * p.kernel_h * p.kernel_w * p.channels > 200000;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n = r / p.out_h, oh = r % p.out_h;
      float* out = y + r * row;
      stem::row_avx512(p, x + n * image, oh, out);
      if (post_.swish) swish_in_place(out, row_dims, row_strides, post_.swish_alpha);
    }
  }

  std::string description() const {  // what GRAPHKILN_ONEDNN_IMPL prints
    const Problem& p = problem_;
    return "graphkiln stem avx512: " + std::to_string(p.channels) + " -> " +
           std::to_string(p.maps) + " channels, " + std::to_string(p.kernel_h) + "x" +
           std::to_string(p.kernel_w) + " window, " + std::to_string(post_.count) + " post-ops" +
           (post_.swish ? " + swish" : "");
  }

 private:
  PostPlan post_;
  Problem problem_{};
  int64_t batch_ = 1;
  std::shared_ptr<void> w_owner_;
  std::vector<float> bias_;
  bool has_bias_ = false, bias_is_constant_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_stem_conv(const KernelSpec& spec) {
  const char* env = std::getenv("GRAPHKILN_CPU_STEM");
  if ((env != nullptr && std::string(env) == "0") || !cpu_features::avx512()) return nullptr;
  if (spec.inputs.size() < 2 || spec.outputs.size() != 1) return nullptr;
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& w = spec.inputs[1];
  const TensorInfo& y = spec.outputs[0];
  if (x.dtype != DType::f32 || w.dtype != DType::f32 || y.dtype != DType::f32) return nullptr;
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4 || w.constant == nullptr) return nullptr;
  if (!x.is_contiguous() || !w.is_contiguous() || !y.is_channels_last()) return nullptr;
  if (x.dims[1] > kMaxChannels || y.dims[1] < kMinMaps || spec.attrs.get_int("group", 1) != 1)
    return nullptr;
  if (w.dims[1] != x.dims[1] || w.dims[0] != y.dims[1] || x.dims[0] != y.dims[0]) return nullptr;
  if (w.dims[1] * w.dims[2] * w.dims[3] * round_up(w.dims[0], kLanes) * 4 > kMaxPackedBytes)
    return nullptr;
  if (spec.attrs.get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return nullptr;
  const auto st = spec.attrs.get_ints("strides", {1, 1});
  const auto pb = spec.attrs.get_ints("pads_begin", {0, 0});
  const auto pe = spec.attrs.get_ints("pads_end", {0, 0});
  if (st.size() != 2 || pb.size() != 2 || pe.size() != 2 || st[0] < 1 || st[1] < 1) return nullptr;
  for (int i = 0; i < 2; ++i)  // the output size the window geometry gives
    if (y.dims[2 + i] != (x.dims[2 + i] + pb[i] + pe[i] - w.dims[2 + i]) / st[i] + 1 ||
        x.dims[2 + i] + pb[i] + pe[i] < w.dims[2 + i] || pb[i] < 0 || pe[i] < 0)
      return nullptr;
  if (spec.has_input(2) && (spec.inputs[2].dtype != DType::f32 ||
                            spec.inputs[2].numel() != y.dims[1] || !spec.inputs[2].is_contiguous()))
    return nullptr;
  PostPlan post;
  if (!plan_post_ops(spec, post)) return nullptr;
  auto kernel = std::make_unique<StemConvKernel>(spec, post);
  if (std::getenv("GRAPHKILN_ONEDNN_IMPL"))
    std::fprintf(stderr, "Conv %s: %s\n", spec.name.c_str(), kernel->description().c_str());
  return kernel;
}

}  // namespace graphkiln
