// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
//
// The HIP names graphkiln uses, mapped to CUDA for nvcc. Add a name here when a .hip source
// starts using it; include this header only through gpu/common.hpp.
#pragma once

#include <cuda_runtime.h>

#define GRAPHKILN_GPU_TOOLKIT "CUDA"
#define GRAPHKILN_GPU_TOOLKIT_MAJOR (CUDART_VERSION / 1000)
#define GRAPHKILN_GPU_TOOLKIT_MINOR (CUDART_VERSION % 1000 / 10)
#define GRAPHKILN_GPU_TOOLKIT_PATCH 0

using hipError_t = cudaError_t;
constexpr hipError_t hipSuccess = cudaSuccess;
constexpr cudaMemcpyKind hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;

inline hipError_t hipRuntimeGetVersion(int* v) { return cudaRuntimeGetVersion(v); }
inline hipError_t hipDriverGetVersion(int* v) { return cudaDriverGetVersion(v); }
inline hipError_t hipGetDeviceCount(int* n) { return cudaGetDeviceCount(n); }
inline hipError_t hipMalloc(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
inline hipError_t hipFree(void* p) { return cudaFree(p); }
inline hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return cudaMemcpy(dst, src, bytes, kind);
}
inline hipError_t hipGetLastError() { return cudaGetLastError(); }
inline hipError_t hipDeviceSynchronize() { return cudaDeviceSynchronize(); }
inline const char* hipGetErrorString(hipError_t e) { return cudaGetErrorString(e); }

// Executor, kernels and BLAS glue.
using hipStream_t = cudaStream_t;
using hipDeviceProp_t = cudaDeviceProp;
constexpr hipError_t hipErrorMemoryAllocation = cudaErrorMemoryAllocation;
constexpr cudaMemcpyKind hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
constexpr cudaMemcpyKind hipMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;

inline hipError_t hipGetDevice(int* d) { return cudaGetDevice(d); }
inline hipError_t hipSetDevice(int d) { return cudaSetDevice(d); }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) {
  return cudaGetDeviceProperties(p, d);
}
inline hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total) {
  return cudaMemGetInfo(free_bytes, total);
}
inline hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned flags) {
  return cudaStreamCreateWithFlags(s, flags);
}
constexpr unsigned hipStreamNonBlocking = cudaStreamNonBlocking;
inline hipError_t hipStreamDestroy(hipStream_t s) { return cudaStreamDestroy(s); }
inline hipError_t hipStreamSynchronize(hipStream_t s) { return cudaStreamSynchronize(s); }
inline hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                                 hipStream_t s) {
  return cudaMemcpyAsync(dst, src, bytes, kind, s);
}
inline hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t s) {
  return cudaMemsetAsync(dst, value, bytes, s);
}

// Graph replay (executor.hip). HIP 5.2's hipGraphInstantiate takes an error node and a log
// buffer; CUDA 12+'s takes flags: the executor calls the HIP form.
using hipGraph_t = cudaGraph_t;
using hipGraphExec_t = cudaGraphExec_t;
using hipGraphNode_t = cudaGraphNode_t;
using hipStreamCaptureMode = cudaStreamCaptureMode;
constexpr hipStreamCaptureMode hipStreamCaptureModeRelaxed = cudaStreamCaptureModeRelaxed;
inline hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
  return cudaStreamBeginCapture(s, mode);
}
inline hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* graph) {
  return cudaStreamEndCapture(s, graph);
}
inline hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph, hipGraphNode_t*,
                                      char*, size_t) {
  return cudaGraphInstantiate(exec, graph, 0);
}
inline hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t s) {
  return cudaGraphLaunch(exec, s);
}
inline hipError_t hipGraphExecDestroy(hipGraphExec_t exec) { return cudaGraphExecDestroy(exec); }
inline hipError_t hipGraphDestroy(hipGraph_t graph) { return cudaGraphDestroy(graph); }

// Per-step timing (executor.hip's profile).
using hipEvent_t = cudaEvent_t;
inline hipError_t hipEventCreate(hipEvent_t* e) { return cudaEventCreate(e); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return cudaEventDestroy(e); }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) { return cudaEventRecord(e, s); }
inline hipError_t hipEventSynchronize(hipEvent_t e) { return cudaEventSynchronize(e); }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) {
  return cudaEventElapsedTime(ms, a, b);
}

// Ordering a run after its device inputs' producers (executor.hip's stage_inputs).
constexpr unsigned hipEventDisableTiming = cudaEventDisableTiming;
inline hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned flags) {
  return cudaEventCreateWithFlags(e, flags);
}
inline hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags) {
  return cudaStreamWaitEvent(s, e, flags);
}
#define hipStreamPerThread cudaStreamPerThread
// Pinned host memory: control steps' read-backs (control.hip), host steps' staging
// (host_step.hip).
inline hipError_t hipHostMalloc(void** p, size_t bytes, unsigned flags) {
  return cudaHostAlloc(p, bytes, flags);
}
inline hipError_t hipHostFree(void* p) { return cudaFreeHost(p); }
