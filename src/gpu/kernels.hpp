// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The factories of the GPU kernel families (one .hip file each), for registry.hip.
#pragma once

#include "gpu/kernel.hpp"

namespace graphkiln {
namespace gpu {

std::unique_ptr<Kernel> make_strided_copy(const KernelSpec& spec);  // copy.hip
std::unique_ptr<Kernel> make_trilu(const KernelSpec& spec);         // copy.hip
std::unique_ptr<Kernel> make_pointwise(const KernelSpec& spec);     // pointwise.hip
std::unique_ptr<Kernel> make_gather(const KernelSpec& spec);        // gather.hip
std::unique_ptr<Kernel> make_gather_elements(const KernelSpec& spec);  // gather.hip
std::unique_ptr<Kernel> make_gemm(const KernelSpec& spec);          // gemm.hip
std::unique_ptr<Kernel> make_matmul_nbits(const KernelSpec& spec);  // matmul_nbits.hip
std::unique_ptr<Kernel> make_conv(const KernelSpec& spec);          // conv.hip
// "Conv" steps: cuDNN where it loads, else make_conv (+ the epilogue)  // conv_cudnn.hip
std::unique_ptr<Kernel> make_conv_step(const KernelSpec& spec);
std::unique_ptr<Kernel> make_max_pool(const KernelSpec& spec);      // pool.hip
std::unique_ptr<Kernel> make_average_pool(const KernelSpec& spec);  // pool.hip
std::unique_ptr<Kernel> make_softmax(const KernelSpec& spec);       // softmax.hip
std::unique_ptr<Kernel> make_log_softmax(const KernelSpec& spec);   // softmax.hip
std::unique_ptr<Kernel> make_layer_norm(const KernelSpec& spec);    // layer_norm.hip
std::unique_ptr<Kernel> make_reduce(const KernelSpec& spec);        // reduce.hip
std::unique_ptr<Kernel> make_arg_reduce(const KernelSpec& spec);    // reduce.hip
std::unique_ptr<Kernel> make_attention(const KernelSpec& spec);     // attention.hip
// the fused kernel where it applies, else make_attention             // attention_flash.hip
std::unique_ptr<Kernel> make_attention_fused_or_not(const KernelSpec& spec);
std::unique_ptr<Kernel> make_cast_lookup(const KernelSpec& spec);   // bytes.hip
std::unique_ptr<Kernel> make_cast_steps(const KernelSpec& spec);    // bytes.hip
std::unique_ptr<Kernel> make_cast_sub_byte_int(const KernelSpec& spec);  // bytes.hip
std::unique_ptr<Kernel> make_bitwise(const KernelSpec& spec);       // bytes.hip
std::unique_ptr<Kernel> make_bitwise_not(const KernelSpec& spec);   // bytes.hip
std::unique_ptr<Kernel> make_quantize(const KernelSpec& spec);      // bytes.hip
std::unique_ptr<Kernel> make_dequantize(const KernelSpec& spec);    // bytes.hip
std::unique_ptr<Kernel> make_nll_loss(const KernelSpec& spec);      // loss.hip
std::unique_ptr<Kernel> make_index_map(const KernelSpec& spec);     // data.hip
std::unique_ptr<Kernel> make_cumsum(const KernelSpec& spec);        // data.hip
std::unique_ptr<Kernel> make_one_hot(const KernelSpec& spec);       // data.hip
std::unique_ptr<Kernel> make_range(const KernelSpec& spec);         // data.hip
std::unique_ptr<Kernel> make_scatter_nd(const KernelSpec& spec);    // data.hip
std::unique_ptr<Kernel> make_scatter_elements(const KernelSpec& spec);  // data.hip
std::unique_ptr<Kernel> make_resize_axis(const KernelSpec& spec);   // data.hip
std::unique_ptr<Kernel> make_topk(const KernelSpec& spec);          // axis.hip
std::unique_ptr<Kernel> make_hardmax(const KernelSpec& spec);       // axis.hip
std::unique_ptr<Kernel> make_lp_norm(const KernelSpec& spec);       // axis.hip

// control.hip: an If / Loop compiled in line (Branch, Jump, LoopTest, LoopNext) and Fill
std::unique_ptr<Kernel> make_branch(const KernelSpec& spec);
std::unique_ptr<Kernel> make_jump(const KernelSpec& spec);
std::unique_ptr<Kernel> make_loop_test(const KernelSpec& spec);
std::unique_ptr<Kernel> make_loop_next(const KernelSpec& spec);
std::unique_ptr<Kernel> make_fill(const KernelSpec& spec);
// host_step.hip: "Host.<cpu kernel>" steps, a cpu kernel run on the host between copies
bool is_host_step(const std::string& kernel);
std::unique_ptr<Kernel> make_host_step(const KernelSpec& spec);

}  // namespace gpu
}  // namespace graphkiln
