// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "ConvTranspose": transposed convolution through oneDNN (deconvolution_forward).
//   inputs: X, W (already (G, O/G, I/G, k...) or (O, I, k...) from Python), B?
//   attrs:  strides, dilations, pads_begin, pads_end (explicit, non-negative), group, post_*
//           (a post-op epilogue, cpu/onednn_post_ops.hpp; operands follow B)
// Source and destination keep the strides they come with; constant weights are reordered
// once, at build time, into the layout the primitive chose.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/onednn_common.hpp"
#include "cpu/onednn_post_ops.hpp"

namespace graphkiln {
namespace {

class DeconvKernel : public Kernel {
 public:
  explicit DeconvKernel(const KernelSpec& spec)
      : post_(std::make_unique<OnednnPostOps>(spec, spec.outputs[0].dims)) {
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& w = spec.inputs[1];
    const TensorInfo& y = spec.outputs[0];
    size_t n = x.dims.size() - 2;
    auto strides = spec.attrs.get_ints("strides");
    auto dilations = spec.attrs.get_ints("dilations");
    auto pb = spec.attrs.get_ints("pads_begin");
    auto pe = spec.attrs.get_ints("pads_end");
    if (strides.size() != n || dilations.size() != n || pb.size() != n || pe.size() != n)
      spec_error(spec, "window attributes do not match the spatial rank");
    dnnl::memory::dims s(strides.begin(), strides.end()), d(n), b(pb.begin(), pb.end()),
        e(pe.begin(), pe.end());
    for (size_t i = 0; i < n; ++i) d[i] = dilations[i] - 1;
    dnnl::memory::desc w_user = onednn_desc(w);
    dnnl::memory::desc w_any(dnnl::memory::dims(w.dims.begin(), w.dims.end()),
                             dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
    bool has_bias = spec.has_input(2);
    if (has_bias) b_md_ = onednn_desc(spec.inputs[2]);
    auto make_pd = [&](const dnnl::memory::desc& src, const dnnl::memory::desc& dst,
                       const OnednnPostOps& post) {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      if (!post.empty()) attr.set_post_ops(post.ops());
      if (has_bias)
        return dnnl::deconvolution_forward::primitive_desc(
            onednn_engine(), dnnl::prop_kind::forward_inference,
            dnnl::algorithm::deconvolution_direct, src, w_any, b_md_, dst, s, d, b, e, attr);
      return dnnl::deconvolution_forward::primitive_desc(
          onednn_engine(), dnnl::prop_kind::forward_inference,
          dnnl::algorithm::deconvolution_direct, src, w_any, dst, s, d, b, e, attr);
    };
    dnnl::memory::desc src_user = onednn_desc(x), dst_user = onednn_desc(y);
    dnnl::memory::desc src_md = src_user, dst_md = dst_user;
    dnnl::deconvolution_forward::primitive_desc pd;
    std::string direct = "none";
    try {
      pd = make_pd(src_md, dst_md, *post_);
      direct = pd.impl_info_str();
    } catch (const dnnl::error&) {
    }
    if (!pd || onednn_slow_impl(direct)) {
      // channels-last on both sides: oneDNN's fast kernels take it
      dnnl::memory::desc src_cl = onednn_desc(x.dtype, x.dims, channels_last_strides(x.dims));
      dnnl::memory::desc dst_cl = onednn_desc(y.dtype, y.dims, channels_last_strides(y.dims));
      try {
        auto post_cl = std::make_unique<OnednnPostOps>(spec, y.dims, true);
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
    if (!pd) spec_error(spec, "oneDNN has no transposed convolution for these arguments");
    prim_ = dnnl::deconvolution_forward(pd);
    auto& eng = onednn_engine();
    src_ = StagedMemory(src_user, src_md, false);
    dst_ = StagedMemory(dst_user, dst_md, true);
    if (w.constant == nullptr) spec_error(spec, "weights must be constant");
    weights_ = onednn_reorder_constant(w_user, w.constant, pd.weights_desc());
    scratchpad_ = dnnl::memory(pd.scratchpad_desc(), eng);
    args_[DNNL_ARG_SRC] = src_.arg();
    args_[DNNL_ARG_WEIGHTS] = weights_;
    args_[DNNL_ARG_DST] = dst_.arg();
    args_[DNNL_ARG_SCRATCHPAD] = scratchpad_;
    if (has_bias) {
      bias_ = dnnl::memory(b_md_, eng, DNNL_MEMORY_NONE);
      args_[DNNL_ARG_BIAS] = bias_;
    }
    post_->add_args(args_);
    if (std::getenv("GRAPHKILN_ONEDNN_IMPL"))
      std::fprintf(stderr, "ConvTranspose %s: %s%s%s (direct: %s; x %s, y %s)\n", spec.name.c_str(),
                   pd.impl_info_str(), src_md != src_user ? " +src reorder" : "",
                   dst_md != dst_user ? " +dst reorder" : "", direct.c_str(),
                   x.is_channels_last() ? "channels-last" : "plain",
                   y.is_channels_last() ? "channels-last" : "plain");
  }

  void run(const void* const* inputs, void* const* outputs) override {
    src_.bind(inputs[0]);
    dst_.bind(outputs[0]);
    if (bias_) bias_.set_data_handle(const_cast<void*>(inputs[2]));
    post_->bind(inputs, stream_);
    src_.before(stream_);
    prim_.execute(stream_, args_);
    dst_.after(stream_);
    stream_.wait();
  }

 private:
  std::unique_ptr<OnednnPostOps> post_;
  dnnl::deconvolution_forward prim_;
  dnnl::stream stream_{onednn_engine()};
  dnnl::memory::desc b_md_;
  StagedMemory src_, dst_;
  dnnl::memory weights_, bias_, scratchpad_;
  std::unordered_map<int, dnnl::memory> args_;
};

std::unique_ptr<Kernel> make_deconv(const KernelSpec& spec) {
  if (spec.inputs.size() < 2 || spec.outputs.size() != 1) spec_error(spec, "takes X, W[, B]");
  const TensorInfo& x = spec.inputs[0];
  if (x.rank() < 3 || x.rank() > 5) spec_error(spec, "X must be 3-D to 5-D");
  if (x.dtype != DType::f32 || spec.inputs[1].dtype != DType::f32 ||
      spec.outputs[0].dtype != DType::f32)
    spec_error(spec, "only f32 is supported");
  return std::make_unique<DeconvKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("ConvTranspose", make_deconv);

}  // namespace graphkiln
