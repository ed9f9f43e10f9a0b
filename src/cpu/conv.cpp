// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Conv": 1-D/2-D/3-D convolution through oneDNN, with groups, dilations, explicit pads, an
// optional bias and a post-op epilogue (cpu/onednn_post_ops.hpp).
//   inputs: X, W, B? and then the binary post-ops' operands
//   attrs:  strides, dilations, pads_begin, pads_end (explicit, from Python), group, post_*,
//           impl_index (tuning: which oneDNN implementation, 0 = oneDNN's first choice)
// ConvInteger (u8 / s8 X, s8 W, s32 Y, targets/cpu/lower_qconv.py): the int32 sums of
// (x - zero point) * w, the zero point q_src_zp or the one element of input q_src_zp_arg.
// Quantized (u8 / s8 X and Y, s8 W: a QLinearConv, targets/cpu/lower_qconv.py): attrs
// q_src_scale, q_wei_scales (one, or one per output channel), q_dst_scale, q_src_zp,
// q_dst_zp; B is float32 in real units (the int32 bias times x_scale * w_scale). oneDNN
// computes y = saturate(round((acc * q_src_scale * q_wei_scales[m] + B[m]) / q_dst_scale +
// q_dst_zp)), acc the int32 sum over x - q_src_zp (padding reads q_src_zp), in float32.
// Source and destination may be plain or channels-last (their strides say which). When the
// given layouts would make oneDNN fall back to a slow implementation, the kernel computes
// in channels-last buffers of its own and reorders around the convolution. Constant weights
// are reordered once, at build time, into the layout the primitive chose. Depthwise filters
// oneDNN would run through gemm go to depthwise_conv.cpp; 3x3 stride-1 f32 convolutions
// where Winograd saves enough multiplications to winograd_conv.cpp; a plain image of at most 8
// channels into channels-last maps (a CNN's first layer) to stem_conv.cpp.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/executor.hpp"
#include "cpu/depthwise_conv.hpp"
#include "cpu/onednn_common.hpp"
#include "cpu/onednn_post_ops.hpp"
#include "cpu/stem_conv.hpp"
#include "cpu/winograd_conv.hpp"

namespace graphkiln {
namespace {

using tag = dnnl::memory::format_tag;

bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }

// The quantization parameters of an int8 convolution: oneDNN attributes at build time, and
// their values as run-time arguments. Scaled (QLinearConv: u8 / s8 Y) or integer
// (ConvInteger: s32 Y, no scales); x's zero point a constant or an input read per run.
class ConvQuantization {
 public:
  ConvQuantization(const KernelSpec& spec, int64_t group) : group_(group) {
    scaled_ = spec.attrs.has("q_wei_scales");
    zp_arg_ = static_cast<int>(spec.attrs.get_int("q_src_zp_arg", -1));
    src_zp_ = static_cast<int32_t>(spec.attrs.get_int("q_src_zp", 0));
    integer_ = !scaled_ && is_int8(spec.inputs[0].dtype);
    if (zp_arg_ >= 0 && (!spec.has_input(zp_arg_) || spec.inputs[zp_arg_].numel() != 1 ||
                         spec.inputs[zp_arg_].dtype != spec.inputs[0].dtype))
      spec_error(spec, "q_src_zp_arg: an input of one element of X's type");
    zp_signed_ = spec.inputs[0].dtype == DType::i8;
    if (!scaled_) return;
    src_scale_ = static_cast<float>(spec.attrs.get_float("q_src_scale"));
    dst_scale_ = static_cast<float>(spec.attrs.get_float("q_dst_scale"));
    for (double s : spec.attrs.get_floats("q_wei_scales"))
      wei_scales_.push_back(static_cast<float>(s));
    dst_zp_ = static_cast<int32_t>(spec.attrs.get_int("q_dst_zp", 0));
    const int64_t maps = spec.inputs[1].dims[0];
    if (wei_scales_.size() != 1 && static_cast<int64_t>(wei_scales_.size()) != maps)
      spec_error(spec, "q_wei_scales: one value or one per output channel");
  }
  bool active() const { return scaled_ || integer_; }
  bool src_zero_point() const { return zp_arg_ >= 0 || src_zp_ != 0; }

  void set(dnnl::primitive_attr& attr) const {
    if (src_zero_point()) attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
    if (!scaled_) return;
    attr.set_scales_mask(DNNL_ARG_SRC, 0);
    // weights are (G, O/G, I/G, k...) when grouped: the output channel spans dims 0 and 1
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, wei_scales_.size() == 1 ? 0 : (group_ > 1 ? 3 : 1));
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    if (dst_zp_ != 0) attr.set_zero_points_mask(DNNL_ARG_DST, 0);
  }

  // The argument memories (filled once, but for a zero point read per run).
  void add_args(std::unordered_map<int, dnnl::memory>& args) {
    auto f32 = [](const std::vector<float>& v) {
      dnnl::memory m({{static_cast<int64_t>(v.size())}, dnnl::memory::data_type::f32, tag::a},
                     onednn_engine());
      std::copy(v.begin(), v.end(), static_cast<float*>(m.get_data_handle()));
      return m;
    };
    auto s32 = [](int32_t v) {
      dnnl::memory m({{1}, dnnl::memory::data_type::s32, tag::a}, onednn_engine());
      *static_cast<int32_t*>(m.get_data_handle()) = v;
      return m;
    };
    if (src_zero_point()) {
      src_zp_memory_ = s32(src_zp_);
      args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = src_zp_memory_;
    }
    if (!scaled_) return;
    args[DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC] = f32({src_scale_});
    args[DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS] = f32(wei_scales_);
    args[DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST] = f32({dst_scale_});
    if (dst_zp_ != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = s32(dst_zp_);
  }

  // A zero point computed by the graph (DynamicQuantizeLinear's): read it for this run.
  void bind(const void* const* inputs) {
    if (zp_arg_ < 0) return;
    const void* p = inputs[zp_arg_];
    *static_cast<int32_t*>(src_zp_memory_.get_data_handle()) =
        zp_signed_ ? *static_cast<const int8_t*>(p) : *static_cast<const uint8_t*>(p);
  }

 private:
  int64_t group_;
  bool scaled_ = false, integer_ = false, zp_signed_ = false;
  int zp_arg_ = -1;
  float src_scale_ = 1, dst_scale_ = 1;
  std::vector<float> wei_scales_;
  int32_t src_zp_ = 0, dst_zp_ = 0;
  dnnl::memory src_zp_memory_;
};

// Float convolutions apply a closing swish with our own loop (swish_tail.hpp)
bool own_swish_tail(const KernelSpec& spec) {
  return spec.inputs[0].dtype == DType::f32 && spec.outputs[0].dtype == DType::f32;
}

class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(const KernelSpec& spec)
      : post_(std::make_unique<OnednnPostOps>(spec, spec.outputs[0].dims, false,
                                              own_swish_tail(spec))),
        quant_(spec, spec.attrs.get_int("group", 1)) {
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& w = spec.inputs[1];
    const TensorInfo& y = spec.outputs[0];
    y_ = y;
    int64_t group = spec.attrs.get_int("group", 1);
    size_t n = x.dims.size() - 2;
    auto strides = spec.attrs.get_ints("strides", std::vector<int64_t>(n, 1));
    auto dilations = spec.attrs.get_ints("dilations", std::vector<int64_t>(n, 1));
    auto pads_begin = spec.attrs.get_ints("pads_begin", std::vector<int64_t>(n, 0));
    auto pads_end = spec.attrs.get_ints("pads_end", std::vector<int64_t>(n, 0));
    if (strides.size() != n || dilations.size() != n || pads_begin.size() != n ||
        pads_end.size() != n)
      spec_error(spec, "window attributes do not match the spatial rank");
    dnnl::memory::dims d_strides(strides.begin(), strides.end()), d_dil(n),
        d_pb(pads_begin.begin(), pads_begin.end()), d_pe(pads_end.begin(), pads_end.end());
    for (size_t i = 0; i < n; ++i) d_dil[i] = dilations[i] - 1;

    // Weights as oneDNN wants them: (G, O/G, I/G, k...) when grouped.
    std::vector<int64_t> wdims = w.dims;
    if (group > 1) {
      wdims.insert(wdims.begin(), group);
      wdims[1] /= group;
    }
    dnnl::memory::desc w_user = onednn_desc(w.dtype, wdims, row_major_strides(wdims));
    dnnl::memory::desc w_any(dnnl::memory::dims(wdims.begin(), wdims.end()), onednn_type(w.dtype),
                             tag::any);
    bool has_bias = spec.has_input(2);
    dnnl::memory::desc b_md;
    if (has_bias) b_md = onednn_desc(spec.inputs[2]);

    auto make_pd = [&](const dnnl::memory::desc& src, const dnnl::memory::desc& dst,
                       const OnednnPostOps& post) {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      if (!post.empty()) attr.set_post_ops(post.ops());
      quant_.set(attr);
      if (has_bias)
        return dnnl::convolution_forward::primitive_desc(
            onednn_engine(), dnnl::prop_kind::forward_inference,
            dnnl::algorithm::convolution_direct, src, w_any, b_md, dst, d_strides, d_dil, d_pb,
            d_pe, attr);
      return dnnl::convolution_forward::primitive_desc(
          onednn_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          src, w_any, dst, d_strides, d_dil, d_pb, d_pe, attr);
    };

    dnnl::memory::desc src_user = onednn_desc(x), dst_user = onednn_desc(y);
    dnnl::memory::desc src_md = src_user, dst_md = dst_user;
    dnnl::convolution_forward::primitive_desc pd;
    bool found = false;
    std::string direct = "none";
    try {
      pd = make_pd(src_md, dst_md, *post_);
      direct = pd.impl_info_str();
      found = !onednn_slow_impl(direct);
    } catch (const dnnl::error&) {
    }
    if (!found && (x.dtype == DType::f32 || quant_.active())) {
      // channels-last on both sides: oneDNN's fast kernels take it
      dnnl::memory::desc src_cl = onednn_desc(x.dtype, x.dims, channels_last_strides(x.dims));
      dnnl::memory::desc dst_cl = onednn_desc(y.dtype, y.dims, channels_last_strides(y.dims));
      try {
        auto post_cl = std::make_unique<OnednnPostOps>(spec, y.dims, true, own_swish_tail(spec));
        auto alt = make_pd(src_cl, dst_cl, *post_cl);
        if (!pd || !onednn_slow_impl(alt.impl_info_str())) {
          pd = alt;
          post_ = std::move(post_cl);
          src_md = src_cl;
          dst_md = dst_cl;
        }
      } catch (const dnnl::error&) {
      }
    }
    if (!pd) spec_error(spec, "oneDNN has no convolution for these arguments");
    // tuning (graphkiln.tuning): "impl_index" k > 0 takes the k-th implementation after the
    // preferred one. Where there is none, or it is a slow one (reference, gemm), the kernel
    // keeps the preferred one: a tuned attribute never makes a build fail.
    if (const int64_t k = spec.attrs.get_int("impl_index", 0); k > 0) {
      bool ok = true;
      for (int64_t i = 0; ok && i < k; ++i) ok = pd.next_impl();
      if (!ok || onednn_slow_impl(pd.impl_info_str())) pd = make_pd(src_md, dst_md, *post_);
    }
    impl_ = pd.impl_info_str();
    prim_ = dnnl::convolution_forward(pd);

    auto& eng = onednn_engine();
    src_ = StagedMemory(src_user, src_md, false);
    dst_ = StagedMemory(dst_user, dst_md, true);
    if (w.constant != nullptr) {
      weights_ = onednn_reorder_constant(w_user, w.constant, pd.weights_desc());
    } else if (pd.weights_desc() != w_user) {
      w_user_ = dnnl::memory(w_user, eng, DNNL_MEMORY_NONE);
      weights_ = dnnl::memory(pd.weights_desc(), eng);
      w_reorder_ = dnnl::reorder(w_user_, weights_);
    } else {
      weights_ = dnnl::memory(w_user, eng, DNNL_MEMORY_NONE);
      weights_from_input_ = true;
    }
    scratchpad_ = dnnl::memory(pd.scratchpad_desc(), eng);
    args_[DNNL_ARG_SRC] = src_.arg();
    args_[DNNL_ARG_WEIGHTS] = weights_;
    args_[DNNL_ARG_DST] = dst_.arg();
    args_[DNNL_ARG_SCRATCHPAD] = scratchpad_;
    if (has_bias) {
      bias_ = dnnl::memory(b_md, eng, DNNL_MEMORY_NONE);
      args_[DNNL_ARG_BIAS] = bias_;
    }
    post_->add_args(args_);
    quant_.add_args(args_);
    description_ = impl_ + " scratch=" + std::to_string(pd.scratchpad_desc().get_size()) +
                   (src_md != src_user ? " +src reorder" : "") +
                   (dst_md != dst_user ? " +dst reorder" : "") +
                   (post_->has_tail() ? " +swish after" : "") + " (direct: " + direct + "; x " +
                   (x.is_channels_last() ? "channels-last" : "plain") + ", y " +
                   (y.is_channels_last() ? "channels-last" : "plain") + ")";
  }

  void run(const void* const* inputs, void* const* outputs) override {
    src_.bind(inputs[0]);
    dst_.bind(outputs[0]);
    if (bias_) bias_.set_data_handle(const_cast<void*>(inputs[2]));
    if (w_reorder_) w_user_.set_data_handle(const_cast<void*>(inputs[1]));
    if (weights_from_input_) weights_.set_data_handle(const_cast<void*>(inputs[1]));
    post_->bind(inputs, stream_);
    quant_.bind(inputs);
    src_.before(stream_);
    if (w_reorder_) w_reorder_.execute(stream_, w_user_, weights_);
    prim_.execute(stream_, args_);
    dst_.after(stream_);
    stream_.wait();
    if (post_->has_tail()) post_->apply_tail(outputs[0], y_.dims, y_.strides);
  }

  const std::string& impl() const { return impl_; }
  // what GRAPHKILN_ONEDNN_IMPL prints: the implementation, scratchpad, reorders, layouts
  const std::string& description() const { return description_; }

 private:
  std::unique_ptr<OnednnPostOps> post_;
  ConvQuantization quant_;
  TensorInfo y_;  // the output as the step gives it (apply_tail's view)
  std::string impl_, description_;
  dnnl::convolution_forward prim_;
  dnnl::stream stream_{onednn_engine()};
  StagedMemory src_, dst_;
  dnnl::memory w_user_, weights_, bias_, scratchpad_;
  dnnl::reorder w_reorder_;
  bool weights_from_input_ = false;
  std::unordered_map<int, dnnl::memory> args_;
};

std::unique_ptr<Kernel> make_conv(const KernelSpec& spec) {
  if (spec.inputs.size() < 2 || spec.outputs.size() != 1) spec_error(spec, "takes X, W[, B]");
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& w = spec.inputs[1];
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank())
    spec_error(spec, "X and W must be 3-D to 5-D tensors of the same rank");
  // quantized: QLinearConv (scaled, u8 / s8 Y) or ConvInteger (s32 Y)
  const bool quantized = is_int8(x.dtype);
  const DType y = spec.outputs[0].dtype;
  const bool scaled = spec.attrs.has("q_wei_scales");
  if (quantized ? !(w.dtype == DType::i8 && (scaled ? is_int8(y) : y == DType::i32))
                : (x.dtype != DType::f32 || w.dtype != DType::f32 || y != DType::f32))
    spec_error(spec,
               "f32 X, W and Y; or u8 / s8 X, s8 W and u8 / s8 Y with q_* scales, or "
               "s32 Y without");
  // a plain image of few channels into channels-last maps: our direct loop
  if (!quantized)
    if (auto stem = make_stem_conv(spec)) return stem;
  // 3x3 stride-1 f32 convolutions: Winograd F(4x4, 3x3) where it saves enough work
  if (!quantized)
    if (auto winograd = make_winograd_conv(spec)) return winograd;
  StepPacking* packing = current_step_packing();  // null outside an Executor's build
  const size_t packed_before = packing != nullptr ? packing->packed.size() : 0;
  const int64_t reused_before = packing != nullptr ? packing->reused : 0;
  auto conv = std::make_unique<ConvKernel>(spec);
  if (onednn_slow_impl(conv->impl()) && !quantized) {
    // depthwise filters oneDNN has no direct kernel for: our own loop (depthwise_conv.cpp)
    if (auto direct = make_depthwise_conv(spec)) {
      if (packing != nullptr) {  // the oneDNN kernel's packed weights go with it
        packing->packed.resize(packed_before);
        packing->reused = reused_before;
      }
      if (std::getenv("GRAPHKILN_ONEDNN_IMPL"))
        std::fprintf(stderr, "Conv %s: graphkiln depthwise (instead of %s)\n", spec.name.c_str(),
                     conv->impl().c_str());
      return direct;
    }
  }
  if (std::getenv("GRAPHKILN_ONEDNN_IMPL"))
    std::fprintf(stderr, "Conv %s: %s\n", spec.name.c_str(), conv->description().c_str());
  return conv;
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Conv", make_conv);

}  // namespace graphkiln
