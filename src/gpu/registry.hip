// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The GPU dispatch table: kernel name (as targets/gpu lowers to it) -> factory, one line each.
#include "gpu/common.hpp"

#include <map>
#include <stdexcept>

#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {
const std::map<std::string, Factory>& table() {
  static const std::map<std::string, Factory> t = {
      {"Copy", make_strided_copy},
      {"StridedCopy", make_strided_copy},
      {"Pointwise", make_pointwise},
      {"Gather", make_gather},
      {"Gemm", make_gemm},
      {"MatMulNBits", make_matmul_nbits},
      {"Conv", make_conv_step},
      {"MaxPool", make_max_pool},
      {"AveragePool", make_average_pool},
      {"Softmax", make_softmax},
      {"LogSoftmax", make_log_softmax},
      {"LayerNormalization", make_layer_norm},
      {"Reduce", make_reduce},
      {"Attention", make_attention_fused_or_not},
      {"Trilu", make_trilu},
      {"GatherElements", make_gather_elements},
      {"ArgReduce", make_arg_reduce},
      {"CastLookup", make_cast_lookup},
      {"CastSteps", make_cast_steps},
      {"CastSubByteInt", make_cast_sub_byte_int},
      {"Bitwise", make_bitwise},
      {"BitwiseNot", make_bitwise_not},
      {"QuantizeLinear", make_quantize},
      {"DequantizeLinear", make_dequantize},
      {"NegativeLogLikelihoodLoss", make_nll_loss},
      {"IndexMap", make_index_map},
      {"CumSum", make_cumsum},
      {"OneHot", make_one_hot},
      {"Range", make_range},
      {"ScatterND", make_scatter_nd},
      {"ScatterElements", make_scatter_elements},
      {"ResizeAxis", make_resize_axis},
      {"TopK", make_topk},
      {"Hardmax", make_hardmax},
      {"LpNormalization", make_lp_norm},
      {"Branch", make_branch},
      {"Jump", make_jump},
      {"LoopTest", make_loop_test},
      {"LoopNext", make_loop_next},
      {"Fill", make_fill},
  };
  return t;
}
}  // namespace

std::unique_ptr<Kernel> make_kernel(const KernelSpec& spec) {
  auto it = table().find(spec.kernel);
  const Factory factory = is_host_step(spec.kernel) ? make_host_step : nullptr;
  if (!factory && it == table().end())
    throw std::invalid_argument("the gpu target has no kernel '" + spec.kernel + "' (node '" +
                                spec.name + "')");
  try {
    return factory ? factory(spec) : it->second(spec);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(spec.kernel + " '" + spec.name + "': " + e.what());
  }
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& item : table()) names.push_back(item.first);
  return names;
}

void check(hipError_t status, const char* what) {
  if (status != hipSuccess)
    throw std::runtime_error(std::string(what) + ": " + hipGetErrorString(status));
}

void check_launch(const char* kernel) {
  const hipError_t status = hipGetLastError();
  if (status != hipSuccess)
    throw std::runtime_error(std::string("launching ") + kernel + ": " + hipGetErrorString(status));
}

}  // namespace gpu
}  // namespace graphkiln
