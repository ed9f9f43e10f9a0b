// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// cuDNN for the NVIDIA build, loaded at run time (dlopen) like cuBLAS in blas.hip: the build
// needs no cuDNN headers and the wheel finds libcudnn.so.9 where CUDA or PyTorch's pip
// packages installed it. Only the legacy convolution entry points graphkiln calls are
// declared here, with the enum values of cuDNN 9's headers (cudnn_graph.h, cudnn_ops.h,
// cudnn_cnn.h). On AMD (HIP) this header declares nothing: GRAPHKILN_GPU_CUDNN stays undefined.
#pragma once

#include "gpu/common.hpp"

#if defined(__CUDACC__) && !defined(__HIP__)
#define GRAPHKILN_GPU_CUDNN 1

#include <cstddef>
#include <mutex>
#include <string>

namespace graphkiln {
namespace gpu {
namespace cudnn {

using Handle = void*;      // cudnnHandle_t
using TensorDesc = void*;  // cudnnTensorDescriptor_t
using FilterDesc = void*;  // cudnnFilterDescriptor_t
using ConvDesc = void*;    // cudnnConvolutionDescriptor_t
using ActDesc = void*;     // cudnnActivationDescriptor_t
using Status = int;        // cudnnStatus_t; the other enums are passed as int too

constexpr Status kSuccess = 0;                              // CUDNN_STATUS_SUCCESS
constexpr int kFloat = 0, kHalf = 2, kBfloat16 = 9;         // cudnnDataType_t
constexpr int kNchw = 0, kNhwc = 1;                         // cudnnTensorFormat_t
constexpr int kCrossCorrelation = 1;                        // CUDNN_CROSS_CORRELATION
constexpr int kDefaultMath = 0, kTensorOpMath = 1, kTensorOpMathAllowConversion = 2,
              kFmaMath = 3;                                 // cudnnMathType_t
constexpr int kActivationRelu = 1, kActivationIdentity = 5;  // cudnnActivationMode_t
constexpr int kNotPropagateNan = 0;                         // cudnnNanPropagation_t
constexpr int kFwdAlgoImplicitPrecompGemm = 1, kFwdAlgoCount = 8;  // cudnnConvolutionFwdAlgo_t

// cudnnConvolutionFwdAlgoPerf_t, member for member
struct AlgoPerf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Api {
  Status (*create)(Handle*) = nullptr;
  Status (*destroy)(Handle) = nullptr;
  Status (*set_stream)(Handle, cudaStream_t) = nullptr;
  const char* (*error_string)(Status) = nullptr;
  size_t (*version)() = nullptr;
  Status (*create_tensor)(TensorDesc*) = nullptr;
  Status (*destroy_tensor)(TensorDesc) = nullptr;
  Status (*set_tensor_4d_ex)(TensorDesc, int dtype, int n, int c, int h, int w, int n_stride,
                             int c_stride, int h_stride, int w_stride) = nullptr;
  Status (*create_filter)(FilterDesc*) = nullptr;
  Status (*destroy_filter)(FilterDesc) = nullptr;
  Status (*set_filter_4d)(FilterDesc, int dtype, int format, int k, int c, int h, int w) = nullptr;
  Status (*create_conv)(ConvDesc*) = nullptr;
  Status (*destroy_conv)(ConvDesc) = nullptr;
  Status (*set_conv_2d)(ConvDesc, int pad_h, int pad_w, int u, int v, int dilation_h,
                        int dilation_w, int mode, int compute_type) = nullptr;
  Status (*set_group_count)(ConvDesc, int) = nullptr;
  Status (*set_math_type)(ConvDesc, int) = nullptr;
  Status (*output_dim)(ConvDesc, TensorDesc, FilterDesc, int*, int*, int*, int*) = nullptr;
  Status (*forward_algorithm_v7)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int, int*,
                                 AlgoPerf*) = nullptr;
  Status (*workspace_size)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int,
                           size_t*) = nullptr;
  Status (*forward)(Handle, const void* alpha, TensorDesc, const void* x, FilterDesc, const void* w,
                    ConvDesc, int algo, void* workspace, size_t workspace_bytes, const void* beta,
                    TensorDesc, void* y) = nullptr;
  Status (*bias_activation_forward)(Handle, const void* alpha1, TensorDesc, const void* x,
                                    FilterDesc, const void* w, ConvDesc, int algo, void* workspace,
                                    size_t workspace_bytes, const void* alpha2, TensorDesc,
                                    const void* z, TensorDesc, const void* bias, ActDesc,
                                    TensorDesc, void* y) = nullptr;
  Status (*create_activation)(ActDesc*) = nullptr;
  Status (*destroy_activation)(ActDesc) = nullptr;
  Status (*set_activation)(ActDesc, int mode, int nan, double coef) = nullptr;
};

// The loaded library, or null with *why set (not found, an entry point missing).
const Api* api(std::string* why = nullptr);
// The build handle: one per device, created on first use and kept for the process (destroying
// it at exit could run after the CUDA runtime is gone), for choosing and trying algorithms
// while Conv steps are built. Callers lock handle_mutex() around set_stream + the calls that
// use it. Runs never use it: each execution context has a handle of its own (below).
Handle handle();
std::mutex& handle_mutex();
// A handle of its own for one execution context (executor.hip), bound to `stream` here once:
// no other context uses it, so its calls need no lock and no cudnnSetStream. Throws when
// cuDNN is not loaded or cudnnCreate fails; destroy_handle(nullptr) does nothing.
Handle create_handle(cudaStream_t stream);
void destroy_handle(Handle h);
// Throws std::runtime_error("<what>: <cuDNN's message>") unless status is kSuccess.
void check(Status status, const char* what);

}  // namespace cudnn
}  // namespace gpu
}  // namespace graphkiln

#endif  // __CUDACC__ && !__HIP__
