// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// GEMM and batched GEMM behind one interface: cuBLAS on NVIDIA (loaded at run time, so the
// wheel needs only the driver and finds libcublas where CUDA or PyTorch installed it);
// rocBLAS on AMD where its headers existed at build time; else graphkiln's own tiled kernel.
// Element types: float32, float16 or bfloat16 operands (A and B alike), C float32 or the
// operands' type; accumulation is always float32. `tf32` lets float32 products run on
// TF32 tensor cores (cuBLAS only: the caller's fast_math). gemm_epilogue adds a bias row and
// ReLU (cuBLASLt's epilogue where it loads: blas_lt.hpp).
// One Blas per execution context (executor.hip), bound to its stream: the vendor handle, its
// workspace and cuBLASLt's plan cache are written by the calls, so a Blas is used by one run
// at a time and never shared between contexts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.hpp"
#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {

struct GemmArgs {
  // Row-major, per batch b: C = alpha * op(A) @ op(B) + beta * C, with op(A) [m, k] and
  // op(B) [k, n]. ld* are row strides as stored (A is [k, m] when trans_a); stride_* the
  // element distance between batches (0 broadcasts one matrix to every batch).
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  float alpha = 1.0f, beta = 0.0f;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  DType ab_type = DType::f32;  // A and B
  DType c_type = DType::f32;
  bool tf32 = false;  // float32 operands may round to TF32 (cuBLAS)
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // the epilogue of gemm_epilogue(): bias[n] added to every row of C (beta must be 0), then
  // ReLU when relu
  const void* bias = nullptr;
  bool relu = false;
};

class LtGemms;

class Blas {
 public:
  // builtin=true always uses graphkiln's own kernel (tests of that path)
  Blas(hipStream_t stream, bool builtin = false);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  void gemm(const GemmArgs& g);
  // gemm() plus g's epilogue (bias, ReLU): one cuBLASLt call where it can, else the product
  // and then an epilogue kernel
  void gemm_epilogue(const GemmArgs& g);
  void sgemm(const GemmArgs& g) { gemm(g); }  // float32 callers (attention)
  // Whether gemm() takes these element types (on every backend: the builtin kernel too).
  static bool supports(DType ab, DType c);
  std::string backend() const { return backend_; }
  // device bytes this object allocated (cuBLAS's workspace)
  size_t workspace_bytes() const;

 private:
  void builtin_gemm(const GemmArgs& g);
  hipStream_t stream_;
  void* handle_ = nullptr;  // the vendor library's handle, when one loaded
  void* workspace_ = nullptr;  // cuBLAS's workspace (kBlasWorkspace bytes), ours to free
  std::unique_ptr<LtGemms> lt_;  // with cuBLAS only
  std::string backend_;
};

}  // namespace gpu
}  // namespace graphkiln
