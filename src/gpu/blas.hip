// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "gpu/common.hpp"
#include "gpu/blas.hpp"
#include "gpu/blas_lt.hpp"

#include <algorithm>
#include <stdexcept>

#include "gpu/half.hpp"
#include "gpu/kernel.hpp"

#if defined(__CUDACC__) && !defined(__HIP__)
#include <dlfcn.h>
#define GRAPHKILN_BLAS_CUBLAS 1
#else
#include <dlfcn.h>
#define GRAPHKILN_BLAS_ROCBLAS 1
#endif  // vendor BLAS

namespace graphkiln {
namespace gpu {

namespace {

// ---- graphkiln's own GEMM: 64x64 tiles, 16-deep K slices, 4x4 outputs a thread --------
// TA: the element type of A and B, TC: of C; loads widen to float, float accumulation, one
// rounding of alpha * acc + beta * C to TC.
constexpr int kTile = 64, kSlice = 16, kThreads = 256;

template <typename TA, typename TC>
__global__ void gemm_tiled(GemmArgs g) {
  __shared__ float as[kSlice][kTile + 4];
  __shared__ float bs[kSlice][kTile + 4];
  const int64_t batch = blockIdx.z;
  const TA* a = static_cast<const TA*>(g.a) + batch * g.stride_a;
  const TA* b = static_cast<const TA*>(g.b) + batch * g.stride_b;
  TC* c = static_cast<TC*>(g.c) + batch * g.stride_c;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < g.k; k0 += kSlice) {
    for (int i = threadIdx.x; i < kSlice * kTile; i += kThreads) {
      const int kk = i / kTile, mm = i % kTile;
      const int64_t row = row0 + mm, kidx = k0 + kk, col = col0 + mm;
      float av = 0.f, bv = 0.f;
      if (row < g.m && kidx < g.k)
        av = load_float(g.trans_a ? a[kidx * g.lda + row] : a[row * g.lda + kidx]);
      if (col < g.n && kidx < g.k)
        bv = load_float(g.trans_b ? b[col * g.ldb + kidx] : b[kidx * g.ldb + col]);
      as[kk][mm] = av;
      bs[kk][mm] = bv;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kSlice; ++kk) {
      float ar[4], br[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) ar[i] = as[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) br[j] = bs[kk][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += ar[i] * br[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t row = row0 + ty * 4 + i;
    if (row >= g.m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t col = col0 + tx * 4 + j;
      if (col >= g.n) continue;
      TC* out = c + row * g.ldc + col;
      *out =
          store_float<TC>(g.alpha * acc[i][j] + (g.beta == 0.f ? 0.f : g.beta * load_float(*out)));
    }
  }
}

template <typename TA, typename TC>
void launch_tiled(const GemmArgs& g, hipStream_t stream) {
  for (int64_t b0 = 0; b0 < g.batch; b0 += 65535) {
    GemmArgs part = g;
    part.a = static_cast<const TA*>(g.a) + b0 * g.stride_a;
    part.b = static_cast<const TA*>(g.b) + b0 * g.stride_b;
    part.c = static_cast<TC*>(g.c) + b0 * g.stride_c;
    const unsigned nb = static_cast<unsigned>(std::min<int64_t>(65535, g.batch - b0));
    const dim3 grid(static_cast<unsigned>((g.n + kTile - 1) / kTile),
                    static_cast<unsigned>((g.m + kTile - 1) / kTile), nb);
    gemm_tiled<TA, TC><<<grid, kThreads, 0, stream>>>(part);
    check_launch("gemm_tiled");
  }
}

// c[b][row][col] = c + bias[col], then max(0, .) when relu: the epilogue where cuBLASLt does
// not run it (one thread an element)
template <typename TC>
__global__ void add_bias_rows(TC* c, const TC* bias, int64_t m, int64_t n, int64_t ldc,
                              int64_t stride_c, int64_t total, int relu) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t col = i % n, row = (i / n) % m, b = i / (n * m);
    TC* out = c + b * stride_c + row * ldc + col;
    const float v = load_float(*out) + load_float(bias[col]);
    *out = store_float<TC>(relu && v < 0.f ? 0.f : v);
  }
}

#if defined(GRAPHKILN_BLAS_CUBLAS)
// The few cuBLAS entry points graphkiln calls, declared here: the CUDA toolkit used to build
// need not carry cuBLAS, and the library is found at run time (CUDA's or PyTorch's copy).
using CublasHandle = void*;
struct Cublas {
  int (*create)(CublasHandle*) = nullptr;
  int (*destroy)(CublasHandle) = nullptr;
  int (*set_stream)(CublasHandle, cudaStream_t) = nullptr;
  int (*set_workspace)(CublasHandle, void*, size_t) = nullptr;  // optional (cuBLAS >= 11)
  int (*sgemm_strided_batched)(CublasHandle, int, int, int, int, int, const float*, const float*,
                               int, long long, const float*, int, long long, const float*, float*,
                               int, long long, int) = nullptr;
  // cublasGemmStridedBatchedEx: data types are cudaDataType, compute cublasComputeType_t
  int (*gemm_strided_batched_ex)(CublasHandle, int, int, int, int, int, const void*, const void*,
                                 int, int, long long, const void*, int, int, long long, const void*,
                                 void*, int, int, long long, int, int, int) = nullptr;
  std::string error;
};

const Cublas& cublas() {
  static const Cublas lib = [] {
    Cublas c;
    void* so = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      so = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (so) break;
    }
    if (!so) {
      c.error = "libcublas.so.13/.12 not found on the library path";
      return c;
    }
    c.create = reinterpret_cast<decltype(c.create)>(dlsym(so, "cublasCreate_v2"));
    c.destroy = reinterpret_cast<decltype(c.destroy)>(dlsym(so, "cublasDestroy_v2"));
    c.set_stream = reinterpret_cast<decltype(c.set_stream)>(dlsym(so, "cublasSetStream_v2"));
    c.set_workspace =
        reinterpret_cast<decltype(c.set_workspace)>(dlsym(so, "cublasSetWorkspace_v2"));
    c.sgemm_strided_batched =
        reinterpret_cast<decltype(c.sgemm_strided_batched)>(dlsym(so, "cublasSgemmStridedBatched"));
    c.gemm_strided_batched_ex = reinterpret_cast<decltype(c.gemm_strided_batched_ex)>(
        dlsym(so, "cublasGemmStridedBatchedEx"));
    if (!c.create || !c.destroy || !c.set_stream || !c.sgemm_strided_batched ||
        !c.gemm_strided_batched_ex)
      c.error = "libcublas lacks an entry point graphkiln uses";
    return c;
  }();
  return lib;
}

// cuBLAS's workspace: its own default is small, and the large Hopper GEMM kernels (split K,
// stream K) need more; PyTorch gives it 32 MiB too. Set once, so CUDA-graph capture never
// sees an allocation.
constexpr size_t kBlasWorkspace = size_t{32} << 20;

// cuBLAS enum values (library_types.h, cublas_api.h)
constexpr int kCudaR32F = 0, kCudaR16F = 2, kCudaR16BF = 14;
constexpr int kComputeF32 = 68, kComputeF32FastTF32 = 77, kGemmDefault = -1;

int cuda_data_type(DType t) {
  return t == DType::f16 ? kCudaR16F : t == DType::bf16 ? kCudaR16BF : kCudaR32F;
}
#endif  // GRAPHKILN_BLAS_CUBLAS

#if defined(GRAPHKILN_BLAS_ROCBLAS)
// rocBLAS, found at run time like cuBLAS above: the wheel then needs neither rocBLAS at build
// time nor a particular soname (ROCm 6 ships librocblas.so.4, ROCm 7 librocblas.so.5).
using RocblasHandle = void*;
struct Rocblas {
  int (*create)(RocblasHandle*) = nullptr;
  int (*destroy)(RocblasHandle) = nullptr;
  int (*set_stream)(RocblasHandle, hipStream_t) = nullptr;
  // rocblas_sgemm_strided_batched: rocblas_operation (int), rocblas_int (int32) sizes,
  // rocblas_stride (int64) strides
  int (*sgemm_strided_batched)(RocblasHandle, int, int, int, int, int, const float*, const float*,
                               int, int64_t, const float*, int, int64_t, const float*, float*, int,
                               int64_t, int) = nullptr;
  std::string error;
};

// rocblas_operation values (rocblas-types.h)
constexpr int kRocblasNoTrans = 111, kRocblasTrans = 112;

const Rocblas& rocblas() {
  static const Rocblas lib = [] {
    Rocblas r;
    void* so = nullptr;
    for (const char* name : {"librocblas.so.5", "librocblas.so.4", "librocblas.so"}) {
      so = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (so) break;
    }
    if (!so) {
      r.error = "librocblas.so.5/.4 not found on the library path";
      return r;
    }
    r.create = reinterpret_cast<decltype(r.create)>(dlsym(so, "rocblas_create_handle"));
    r.destroy = reinterpret_cast<decltype(r.destroy)>(dlsym(so, "rocblas_destroy_handle"));
    r.set_stream = reinterpret_cast<decltype(r.set_stream)>(dlsym(so, "rocblas_set_stream"));
    r.sgemm_strided_batched = reinterpret_cast<decltype(r.sgemm_strided_batched)>(
        dlsym(so, "rocblas_sgemm_strided_batched"));
    if (!r.create || !r.destroy || !r.set_stream || !r.sgemm_strided_batched)
      r.error = "librocblas lacks an entry point graphkiln uses";
    return r;
  }();
  return lib;
}
#endif  // GRAPHKILN_BLAS_ROCBLAS

}  // namespace

Blas::Blas(hipStream_t stream, bool builtin) : stream_(stream) {
  backend_ = "graphkiln tiled gemm";
  if (builtin) return;
#if defined(GRAPHKILN_BLAS_CUBLAS)
  const Cublas& lib = cublas();
  if (!lib.error.empty()) {
    backend_ += " (cuBLAS not used: " + lib.error + ")";
    return;
  }
  if (lib.create(&handle_) != 0) throw std::runtime_error("cublasCreate failed");
  if (lib.set_stream(handle_, stream_) != 0) throw std::runtime_error("cublasSetStream failed");
  if (lib.set_workspace) {
    check(hipMalloc(&workspace_, kBlasWorkspace), "cuBLAS workspace");
    if (lib.set_workspace(handle_, workspace_, kBlasWorkspace) != 0)
      throw std::runtime_error("cublasSetWorkspace failed");
  }
  lt_ = std::make_unique<LtGemms>();
  backend_ = "cuBLAS";
#elif defined(GRAPHKILN_BLAS_ROCBLAS)
  const Rocblas& lib = rocblas();
  if (!lib.error.empty()) {
    backend_ += " (rocBLAS not used: " + lib.error + ")";
    return;
  }
  if (lib.create(&handle_) != 0) throw std::runtime_error("rocblas_create_handle failed");
  if (lib.set_stream(handle_, stream_) != 0) throw std::runtime_error("rocblas_set_stream failed");
  backend_ = "rocBLAS";
#endif  // vendor BLAS
}

Blas::~Blas() {
  lt_.reset();
  if (!handle_) return;
#if defined(GRAPHKILN_BLAS_CUBLAS)
  cublas().destroy(handle_);
  if (workspace_) hipFree(workspace_);
#elif defined(GRAPHKILN_BLAS_ROCBLAS)
  rocblas().destroy(handle_);
#endif  // vendor BLAS
}

size_t Blas::workspace_bytes() const {
#if defined(GRAPHKILN_BLAS_CUBLAS)
  return workspace_ ? kBlasWorkspace : 0;
#else
  return 0;
#endif
}

bool Blas::supports(DType ab, DType c) { return is_float_type(ab) && (c == ab || c == DType::f32); }

void Blas::builtin_gemm(const GemmArgs& g) {
  const bool ok = dispatch_float(g.ab_type, [&](auto ab) {
    using TA = decltype(ab);
    if (g.c_type == DType::f32) launch_tiled<TA, float>(g, stream_);
    else if (g.c_type == g.ab_type) launch_tiled<TA, TA>(g, stream_);
  });
  (void)ok;
}

void Blas::gemm_epilogue(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (!g.bias || g.beta != 0.f || g.c_type != g.ab_type)
    throw std::runtime_error("gemm_epilogue: needs a bias, beta 0 and C of the operands' type");
#if defined(GRAPHKILN_BLAS_CUBLAS)
  if (lt_ && lt_->run(g, stream_, workspace_, workspace_ ? kBlasWorkspace : 0)) return;
#endif
  GemmArgs plain = g;
  plain.bias = nullptr;
  gemm(plain);
  const int64_t total = g.batch * g.m * g.n;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, 65535));
  dispatch_float(g.c_type, [&](auto t) {
    using T = decltype(t);
    add_bias_rows<T><<<blocks, 256, 0, stream_>>>(static_cast<T*>(g.c),
                                                  static_cast<const T*>(g.bias), g.m, g.n, g.ldc,
                                                  g.stride_c, total, g.relu ? 1 : 0);
  });
  check_launch("add_bias_rows");
}

void Blas::gemm(const GemmArgs& g) {
  if (!supports(g.ab_type, g.c_type))
    throw std::runtime_error(std::string("gemm: no kernel for operands ") + dtype_name(g.ab_type) +
                             " and result " + dtype_name(g.c_type));
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (!handle_) return builtin_gemm(g);
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
#if defined(GRAPHKILN_BLAS_CUBLAS)
  const bool plain = g.ab_type == DType::f32 && g.c_type == DType::f32 && !g.tf32;
  const int status =
      plain ? cublas().sgemm_strided_batched(
                  handle_, g.trans_b ? 1 : 0, g.trans_a ? 1 : 0, static_cast<int>(g.n),
                  static_cast<int>(g.m), static_cast<int>(g.k), &g.alpha,
                  static_cast<const float*>(g.b), static_cast<int>(g.ldb), g.stride_b,
                  static_cast<const float*>(g.a), static_cast<int>(g.lda), g.stride_a, &g.beta,
                  static_cast<float*>(g.c), static_cast<int>(g.ldc), g.stride_c,
                  static_cast<int>(g.batch))
            : cublas().gemm_strided_batched_ex(
                  handle_, g.trans_b ? 1 : 0, g.trans_a ? 1 : 0, static_cast<int>(g.n),
                  static_cast<int>(g.m), static_cast<int>(g.k), &g.alpha, g.b,
                  cuda_data_type(g.ab_type), static_cast<int>(g.ldb), g.stride_b, g.a,
                  cuda_data_type(g.ab_type), static_cast<int>(g.lda), g.stride_a, &g.beta, g.c,
                  cuda_data_type(g.c_type), static_cast<int>(g.ldc), g.stride_c,
                  static_cast<int>(g.batch),
                  g.tf32 && g.ab_type == DType::f32 ? kComputeF32FastTF32 : kComputeF32,
                  kGemmDefault);
  if (status != 0)
    throw std::runtime_error(
        std::string(plain ? "cublasSgemmStridedBatched" : "cublasGemmStridedBatchedEx") +
        " failed (status " + std::to_string(status) + ")");
#elif defined(GRAPHKILN_BLAS_ROCBLAS)
  if (g.ab_type != DType::f32 || g.c_type != DType::f32) return builtin_gemm(g);
  const int status = rocblas().sgemm_strided_batched(
      handle_, g.trans_b ? kRocblasTrans : kRocblasNoTrans,
      g.trans_a ? kRocblasTrans : kRocblasNoTrans, static_cast<int>(g.n), static_cast<int>(g.m),
      static_cast<int>(g.k), &g.alpha, static_cast<const float*>(g.b), static_cast<int>(g.ldb),
      g.stride_b, static_cast<const float*>(g.a), static_cast<int>(g.lda), g.stride_a, &g.beta,
      static_cast<float*>(g.c), static_cast<int>(g.ldc), g.stride_c, static_cast<int>(g.batch));
  if (status != 0)
    throw std::runtime_error("rocblas_sgemm_strided_batched failed (status " +
                             std::to_string(status) + ")");
#endif  // vendor BLAS
}

}  // namespace gpu
}  // namespace graphkiln
