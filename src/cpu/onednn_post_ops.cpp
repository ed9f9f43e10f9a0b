// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "cpu/onednn_post_ops.hpp"

#include <map>
#include <string>

#include "cpu/onednn_common.hpp"
#include "cpu/swish_tail.hpp"

namespace graphkiln {
namespace {

using algo = dnnl::algorithm;

const std::map<std::string, algo>& eltwise_names() {
  static const std::map<std::string, algo> names = {
      {"relu", algo::eltwise_relu},
      {"clip", algo::eltwise_clip_v2},
      {"logistic", algo::eltwise_logistic},
      {"tanh", algo::eltwise_tanh},
      {"elu", algo::eltwise_elu},
      {"exp", algo::eltwise_exp},
      {"log", algo::eltwise_log},
      {"abs", algo::eltwise_abs},
      {"sqrt", algo::eltwise_sqrt},
      {"square", algo::eltwise_square},
      {"linear", algo::eltwise_linear},
      {"hardswish", algo::eltwise_hardswish},
      {"hardsigmoid", algo::eltwise_hardsigmoid},
      {"gelu_erf", algo::eltwise_gelu_erf},
      {"gelu_tanh", algo::eltwise_gelu_tanh},
      {"swish", algo::eltwise_swish},
      {"soft_relu", algo::eltwise_soft_relu},
      {"mish", algo::eltwise_mish},
  };
  return names;
}

const std::map<std::string, algo>& binary_names() {
  static const std::map<std::string, algo> names = {
      {"add", algo::binary_add}, {"sub", algo::binary_sub}, {"mul", algo::binary_mul},
      {"div", algo::binary_div}, {"max", algo::binary_max}, {"min", algo::binary_min},
  };
  return names;
}

}  // namespace

OnednnPostOps::OnednnPostOps(const KernelSpec& spec, const std::vector<int64_t>& dst_dims,
                             bool channels_last, bool own_swish_tail) {
  if (!spec.attrs.has("post_ops")) return;
  std::vector<std::string> names = spec.attrs.get_strs("post_ops");
  std::vector<double> alpha = spec.attrs.get_floats("post_alpha");
  std::vector<double> beta = spec.attrs.get_floats("post_beta");
  std::vector<int64_t> arg = spec.attrs.get_ints("post_arg");
  if (alpha.size() != names.size() || beta.size() != names.size() || arg.size() != names.size())
    spec_error(spec, "post_ops, post_alpha, post_beta and post_arg differ in length");
  for (size_t i = 0; i < names.size(); ++i) {
    if (own_swish_tail && i + 1 == names.size() && names[i] == "swish") {
      tail_swish_ = true;
      tail_alpha_ = static_cast<float>(alpha[i]);
      continue;
    }
    auto e = eltwise_names().find(names[i]);
    if (e != eltwise_names().end()) {
      ops_.append_eltwise(e->second, static_cast<float>(alpha[i]), static_cast<float>(beta[i]));
      continue;
    }
    auto b = binary_names().find(names[i]);
    if (b == binary_names().end()) spec_error(spec, "unknown post-op " + names[i]);
    int input = static_cast<int>(arg[i]);
    if (input < 0 || !spec.has_input(input)) spec_error(spec, "binary post-op without operand");
    const TensorInfo& t = spec.inputs[input];
    if (t.dtype != DType::f32) spec_error(spec, "binary post-op operand must be f32");
    size_t rank = dst_dims.size();
    if (t.dims.size() > rank) spec_error(spec, "binary post-op operand has a higher rank");
    std::vector<int64_t> dims(rank - t.dims.size(), 1), strides(rank - t.dims.size(), 0);
    int64_t outer = t.numel();
    for (auto& s : strides) s = outer;
    dims.insert(dims.end(), t.dims.begin(), t.dims.end());
    strides.insert(strides.end(), t.strides.begin(), t.strides.end());
    for (size_t d = 0; d < rank; ++d)
      if (dims[d] != 1 && dims[d] != dst_dims[d])
        spec_error(spec, "binary post-op operand does not broadcast to the output");
    dnnl::memory::desc md = onednn_desc(t.dtype, dims, strides);
    binary_index_.push_back(static_cast<int>(i));
    if (channels_last && rank >= 3 && dims == dst_dims && !t.is_channels_last()) {
      std::vector<int64_t> cl(rank);
      int64_t step = dims[1];
      cl[1] = 1;
      for (size_t d = rank; d-- > 2;) {
        cl[d] = step;
        step *= dims[d];
      }
      cl[0] = step;
      dnnl::memory::desc staged_md = onednn_desc(t.dtype, dims, cl);
      Staged s{input,
               dnnl::memory(md, onednn_engine(), DNNL_MEMORY_NONE),
               dnnl::memory(staged_md, onednn_engine()),
               {}};
      s.reorder = dnnl::reorder(s.user, s.staged);
      ops_.append_binary(b->second, staged_md);
      binary_.emplace_back(-1, s.staged);
      staged_.push_back(std::move(s));
      continue;
    }
    ops_.append_binary(b->second, md);
    binary_.emplace_back(input, dnnl::memory(md, onednn_engine(), DNNL_MEMORY_NONE));
  }
}

void OnednnPostOps::apply_tail(void* data, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& strides) const {
  if (tail_swish_) swish_in_place(static_cast<float*>(data), dims, strides, tail_alpha_);
}

void OnednnPostOps::add_args(std::unordered_map<int, dnnl::memory>& args) const {
  for (size_t k = 0; k < binary_.size(); ++k)
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(binary_index_[k]) | DNNL_ARG_SRC_1] = binary_[k].second;
}

void OnednnPostOps::bind(const void* const* inputs, dnnl::stream& stream) {
  for (auto& [input, memory] : binary_)
    if (input >= 0) memory.set_data_handle(const_cast<void*>(inputs[input]));
  for (auto& s : staged_) {
    s.user.set_data_handle(const_cast<void*>(inputs[s.input]));
    s.reorder.execute(stream, s.user, s.staged);
  }
}

void OnednnPostOps::bind(const void* const* inputs) {
  if (staged_.empty()) {
    for (auto& [input, memory] : binary_)
      if (input >= 0) memory.set_data_handle(const_cast<void*>(inputs[input]));
    return;
  }
  dnnl::stream stream(onednn_engine());
  bind(inputs, stream);
  stream.wait();
}

}  // namespace graphkiln
