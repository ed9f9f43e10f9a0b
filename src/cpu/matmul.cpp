// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "MatMul": one oneDNN matmul primitive (f32) for MatMul, Gemm and their fused epilogues.
// The Python lowering describes the problem as oneDNN sees it (equal-rank views of A, B and
// the output, transposes as strides, batch broadcast as dims of 1):
//   a_dims/a_strides, b_dims/b_strides, y_dims/y_strides  views (default: the tensors' own)
//   bias_arg   kernel input holding a bias of dims (1, ..., 1, N), or -1
//   post_ops, post_alpha, post_beta, post_arg   the epilogue (see onednn_post_ops.hpp)
//   impl_index   tuning: which oneDNN implementation (0 = oneDNN's first choice)
// A constant B is packed at build time in the layout the primitive prefers.
// Integer (MatMulInteger, targets/cpu/lower_qmatmul.py): u8 / s8 A, s8 B, s32 Y, sums of
// (A - zero point) * B with oneDNN's int8 kernels (VNNI / AMX); A's zero point is the
// constant q_src_zp, or the one element of input q_src_zp_arg (read at each run).
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <unordered_map>

#include "core/kernel.hpp"
#include "cpu/onednn_common.hpp"
#include "cpu/onednn_post_ops.hpp"

namespace graphkiln {
namespace {

using tag = dnnl::memory::format_tag;

struct View {
  std::vector<int64_t> dims, strides;
};

View view_of(const KernelSpec& spec, const std::string& prefix, const TensorInfo& t) {
  View v{spec.attrs.get_ints(prefix + "_dims", t.dims),
         spec.attrs.get_ints(prefix + "_strides", t.strides)};
  if (v.dims.size() != v.strides.size()) spec_error(spec, prefix + ": dims and strides differ");
  return v;
}

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const KernelSpec& spec) : stream_(onednn_engine()) {
    const TensorInfo& a = spec.inputs[0];
    const TensorInfo& b = spec.inputs[1];
    const TensorInfo& y = spec.outputs[0];
    const bool integer = a.dtype != DType::f32;
    if (integer ? !((a.dtype == DType::u8 || a.dtype == DType::i8) && b.dtype == DType::i8 &&
                    y.dtype == DType::i32)
                : (b.dtype != DType::f32 || y.dtype != DType::f32))
      spec_error(spec, "f32 A, B and Y, or u8 / s8 A, s8 B and s32 Y");
    View av = view_of(spec, "a", a), bv = view_of(spec, "b", b), yv = view_of(spec, "y", y);
    size_t rank = yv.dims.size();
    if (rank < 2 || av.dims.size() != rank || bv.dims.size() != rank)
      spec_error(spec, "views of A, B and Y must have one rank >= 2");
    post_ops_ = std::make_unique<OnednnPostOps>(spec, yv.dims, false, !integer);
    y_dims_ = yv.dims;
    y_strides_ = yv.strides;

    dnnl::engine& eng = onednn_engine();
    auto src_md = onednn_desc(a.dtype, av.dims, av.strides);
    auto dst_md = onednn_desc(y.dtype, yv.dims, yv.strides);
    auto b_user_md = onednn_desc(b.dtype, bv.dims, bv.strides);
    b_constant_ = b.constant != nullptr;
    dnnl::memory::desc wei_md =
        b_constant_ ? dnnl::memory::desc(dnnl::memory::dims(bv.dims.begin(), bv.dims.end()),
                                         onednn_type(b.dtype), tag::any)
                    : b_user_md;
    zp_arg_ = static_cast<int>(spec.attrs.get_int("q_src_zp_arg", -1));
    const int64_t zp_constant = spec.attrs.get_int("q_src_zp", 0);
    if (zp_arg_ >= 0 && (!spec.has_input(zp_arg_) || spec.inputs[zp_arg_].numel() != 1 ||
                         spec.inputs[zp_arg_].dtype != a.dtype))
      spec_error(spec, "q_src_zp_arg: an input of one element of A's type");
    const bool zero_point = integer && (zp_arg_ >= 0 || zp_constant != 0);
    bias_arg_ = static_cast<int>(spec.attrs.get_int("bias_arg", -1));
    dnnl::memory::desc bias_md;
    if (bias_arg_ >= 0) {
      if (!spec.has_input(bias_arg_) || spec.inputs[bias_arg_].dtype != DType::f32 ||
          spec.inputs[bias_arg_].numel() != yv.dims.back())
        spec_error(spec, "bias must be f32 with N elements");
      std::vector<int64_t> dims(rank, 1), strides(rank, yv.dims.back());
      dims.back() = yv.dims.back();
      strides.back() = 1;
      bias_md = onednn_desc(DType::f32, dims, strides);
    }
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (!post_ops_->empty()) attr.set_post_ops(post_ops_->ops());
    if (zero_point) attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
    auto make_pd = [&] {
      return bias_arg_ >= 0
                 ? dnnl::matmul::primitive_desc(eng, src_md, wei_md, bias_md, dst_md, attr)
                 : dnnl::matmul::primitive_desc(eng, src_md, wei_md, dst_md, attr);
    };
    dnnl::matmul::primitive_desc pd;
    try {
      pd = make_pd();
    } catch (const dnnl::error& e) {
      spec_error(spec, std::string("oneDNN matmul rejected the problem: ") + e.what());
    }
    // tuning (graphkiln.tuning): "impl_index" k > 0 takes the k-th implementation after the
    // preferred one; where there is none, or it is the reference one, the preferred one stays
    // (a tuned attribute never makes a build fail)
    if (const int64_t k = spec.attrs.get_int("impl_index", 0); k > 0) {
      bool ok = true;
      for (int64_t i = 0; ok && i < k; ++i) ok = pd.next_impl();
      if (!ok || std::string(pd.impl_info_str()).find("ref") != std::string::npos) pd = make_pd();
    }
    impl_ = pd.impl_info_str();
    if (std::getenv("GRAPHKILN_ONEDNN_IMPL"))
      std::fprintf(stderr, "graphkiln MatMul %s: %s%s\n", spec.name.c_str(), impl_.c_str(),
                   post_ops_->has_tail() ? " +swish after" : "");
    primitive_ = dnnl::matmul(pd);

    src_ = dnnl::memory(pd.src_desc(), eng, DNNL_MEMORY_NONE);
    dst_ = dnnl::memory(pd.dst_desc(), eng, DNNL_MEMORY_NONE);
    if (b_constant_) wei_ = onednn_reorder_constant(b_user_md, b.constant, pd.weights_desc());
    else wei_ = dnnl::memory(pd.weights_desc(), eng, DNNL_MEMORY_NONE);
    scratchpad_ = dnnl::memory(pd.scratchpad_desc(), eng);
    args_ = {{DNNL_ARG_SRC, src_},
             {DNNL_ARG_WEIGHTS, wei_},
             {DNNL_ARG_DST, dst_},
             {DNNL_ARG_SCRATCHPAD, scratchpad_}};
    if (bias_arg_ >= 0) {
      bias_ = dnnl::memory(pd.bias_desc(), eng, DNNL_MEMORY_NONE);
      args_[DNNL_ARG_BIAS] = bias_;
    }
    post_ops_->add_args(args_);
    if (zero_point) {
      zp_ = dnnl::memory({{1}, dnnl::memory::data_type::s32, tag::a}, eng);
      *static_cast<int32_t*>(zp_.get_data_handle()) = static_cast<int32_t>(zp_constant);
      args_[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zp_;
      zp_signed_ = a.dtype == DType::i8;
    }
  }

  void run(const void* const* inputs, void* const* outputs) override {
    src_.set_data_handle(const_cast<void*>(inputs[0]));
    if (!b_constant_) wei_.set_data_handle(const_cast<void*>(inputs[1]));
    if (bias_arg_ >= 0) bias_.set_data_handle(const_cast<void*>(inputs[bias_arg_]));
    dst_.set_data_handle(outputs[0]);
    post_ops_->bind(inputs);
    if (zp_arg_ >= 0) {  // a zero point computed by the graph (DynamicQuantizeLinear's)
      const void* p = inputs[zp_arg_];
      *static_cast<int32_t*>(zp_.get_data_handle()) = zp_signed_ ? *static_cast<const int8_t*>(p)
                                                                 : *static_cast<const uint8_t*>(p);
    }
    primitive_.execute(stream_, args_);
    stream_.wait();
    if (post_ops_->has_tail()) post_ops_->apply_tail(outputs[0], y_dims_, y_strides_);
  }

 private:
  dnnl::stream stream_;
  std::unique_ptr<OnednnPostOps> post_ops_;
  std::vector<int64_t> y_dims_, y_strides_;  // Y's view, as the primitive writes it
  dnnl::primitive primitive_;
  dnnl::memory src_, wei_, dst_, bias_, scratchpad_, zp_;
  std::unordered_map<int, dnnl::memory> args_;
  bool b_constant_ = false;
  int bias_arg_ = -1, zp_arg_ = -1;
  bool zp_signed_ = false;
  std::string impl_;
};

std::unique_ptr<Kernel> make_matmul(const KernelSpec& spec) {
  if (spec.inputs.size() < 2 || spec.outputs.size() != 1)
    spec_error(spec, "takes A, B (and epilogue operands) and one output");
  return std::make_unique<MatMulKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("MatMul", make_matmul);

}  // namespace graphkiln
