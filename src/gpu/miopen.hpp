// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// MIOpen for the AMD build, loaded at run time (dlopen) like rocBLAS in blas.hip: the build
// needs no MIOpen headers and the wheel runs where MIOpen is missing (Conv steps then run
// conv.hip's kernel). Only the convolution entry points graphkiln calls are declared here,
// with the enum values and struct layout of MIOpen's miopen/miopen.h (ROCm 6.4; checked
// against that header by tests/cpp/miopen_abi_check.cpp). On NVIDIA this header declares
// nothing: GRAPHKILN_GPU_MIOPEN stays undefined.
#pragma once

#include "gpu/common.hpp"

#if defined(__HIP__)
#define GRAPHKILN_GPU_MIOPEN 1

#include <cstddef>
#include <mutex>
#include <string>

namespace graphkiln {
namespace gpu {
namespace miopen {

using Handle = void*;      // miopenHandle_t
using TensorDesc = void*;  // miopenTensorDescriptor_t (tensors and filters alike)
using ConvDesc = void*;    // miopenConvolutionDescriptor_t
using Status = int;        // miopenStatus_t; the other enums are passed as int too

constexpr Status kSuccess = 0;                      // miopenStatusSuccess
constexpr int kHalf = 0, kFloat = 1, kBfloat16 = 5;  // miopenDataType_t
constexpr int kConvolution = 0;                     // miopenConvolution (cross-correlation)
constexpr int kFindCount = 4;                       // algorithms asked of Find at most

// miopenConvAlgoPerf_t, member for member (its first member is a union of algorithm enums)
struct AlgoPerf {
  int fwd_algo;  // miopenConvFwdAlgorithm_t
  float time;
  size_t memory;
};

struct Api {
  Status (*create)(Handle*) = nullptr;
  Status (*create_with_stream)(Handle*, hipStream_t) = nullptr;
  Status (*destroy)(Handle) = nullptr;
  const char* (*error_string)(Status) = nullptr;
  Status (*version)(size_t* major, size_t* minor, size_t* patch) = nullptr;
  Status (*create_tensor)(TensorDesc*) = nullptr;
  Status (*destroy_tensor)(TensorDesc) = nullptr;
  Status (*set_tensor)(TensorDesc, int dtype, int rank, const int* dims,
                       const int* strides) = nullptr;
  Status (*create_conv)(ConvDesc*) = nullptr;
  Status (*destroy_conv)(ConvDesc) = nullptr;
  Status (*init_conv)(ConvDesc, int mode, int pad_h, int pad_w, int stride_h, int stride_w,
                      int dilation_h, int dilation_w) = nullptr;
  Status (*set_group_count)(ConvDesc, int) = nullptr;
  Status (*output_dim)(ConvDesc, TensorDesc x, TensorDesc w, int*, int*, int*, int*) = nullptr;
  // miopenConvolutionForwardGetWorkSpaceSize: note w before x
  Status (*workspace_size)(Handle, TensorDesc w, TensorDesc x, ConvDesc, TensorDesc y,
                           size_t*) = nullptr;
  Status (*find_forward)(Handle, TensorDesc x, const void*, TensorDesc w, const void*, ConvDesc,
                         TensorDesc y, void*, int request, int* returned, AlgoPerf*,
                         void* workspace, size_t workspace_bytes, bool exhaustive) = nullptr;
  Status (*forward)(Handle, const void* alpha, TensorDesc x, const void*, TensorDesc w, const void*,
                    ConvDesc, int algo, const void* beta, TensorDesc y, void*, void* workspace,
                    size_t workspace_bytes) = nullptr;
};

// The loaded library, or null with *why set (not found, an entry point missing).
const Api* api(std::string* why = nullptr);
// The build handle: one per device, created on first use and kept for the process, for
// finding algorithms while Conv steps are built (on the null stream). Callers lock
// handle_mutex() around the calls that use it. Runs never use it: each execution context
// has a handle of its own (below).
Handle handle();
std::mutex& handle_mutex();
// A handle of its own for one execution context (executor.hip), bound to `stream`. Throws
// when MIOpen is not loaded or the handle cannot be made; destroy_handle(nullptr) does
// nothing.
Handle create_handle(hipStream_t stream);
void destroy_handle(Handle h);
// Throws std::runtime_error("<what>: <MIOpen's message>") unless status is kSuccess.
void check(Status status, const char* what);

}  // namespace miopen
}  // namespace gpu
}  // namespace graphkiln

#endif  // __HIP__
