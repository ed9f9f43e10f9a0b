// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "gpu/common.hpp"
#include "gpu/blas_lt.hpp"
#include "gpu/blas_lt_count.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#if defined(__CUDACC__) && !defined(__HIP__)
#include <dlfcn.h>
#endif

namespace graphkiln {
namespace gpu {

namespace {
std::atomic<uint64_t> lt_calls{0};
}  // namespace

uint64_t lt_gemm_calls() { return lt_calls.load(); }

#if defined(__CUDACC__) && !defined(__HIP__)
namespace {

// The cuBLASLt entry points used, declared here (the toolkit used to build need not carry
// cuBLAS); the handles and descriptors are opaque pointers, the statuses ints (0: success).
using Opaque = void*;
struct AlgoResult {  // cublasLtMatmulHeuristicResult_t
  uint64_t algo[8];
  size_t workspace;
  int state;
  float waves;
  int reserved[4];
};
struct Lib {
  int (*create)(Opaque*) = nullptr;
  int (*destroy)(Opaque) = nullptr;
  int (*desc_create)(Opaque*, int, int) = nullptr;
  int (*desc_destroy)(Opaque) = nullptr;
  int (*desc_set)(Opaque, int, const void*, size_t) = nullptr;
  int (*layout_create)(Opaque*, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*layout_destroy)(Opaque) = nullptr;
  int (*pref_create)(Opaque*) = nullptr;
  int (*pref_destroy)(Opaque) = nullptr;
  int (*pref_set)(Opaque, int, const void*, size_t) = nullptr;
  int (*heuristic)(Opaque, Opaque, Opaque, Opaque, Opaque, Opaque, Opaque, int, AlgoResult*,
                   int*) = nullptr;
  int (*matmul)(Opaque, Opaque, const void*, const void*, Opaque, const void*, Opaque, const void*,
                const void*, Opaque, void*, Opaque, const void*, void*, size_t,
                cudaStream_t) = nullptr;
  bool ok = false;
};

const Lib& lib() {
  static const Lib lib = [] {
    Lib l;
    void* so = nullptr;
    for (const char* name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}) {
      so = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (so) break;
    }
    if (!so) return l;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(so, name));
      return fn != nullptr;
    };
    l.ok = get(l.create, "cublasLtCreate") && get(l.destroy, "cublasLtDestroy") &&
           get(l.desc_create, "cublasLtMatmulDescCreate") &&
           get(l.desc_destroy, "cublasLtMatmulDescDestroy") &&
           get(l.desc_set, "cublasLtMatmulDescSetAttribute") &&
           get(l.layout_create, "cublasLtMatrixLayoutCreate") &&
           get(l.layout_destroy, "cublasLtMatrixLayoutDestroy") &&
           get(l.pref_create, "cublasLtMatmulPreferenceCreate") &&
           get(l.pref_destroy, "cublasLtMatmulPreferenceDestroy") &&
           get(l.pref_set, "cublasLtMatmulPreferenceSetAttribute") &&
           get(l.heuristic, "cublasLtMatmulAlgoGetHeuristic") && get(l.matmul, "cublasLtMatmul");
    return l;
  }();
  return lib;
}

// enum values (library_types.h, cublas_api.h, cublasLt.h)
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;
constexpr int kComputeF32 = 68, kComputeF32FastTF32 = 77;
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
constexpr uint32_t kEpilogueBias = 4, kEpilogueReluBias = 6;
constexpr int kPrefMaxWorkspace = 1;

int data_type(DType t) { return t == DType::f16 ? kR16F : t == DType::bf16 ? kR16BF : kR32F; }

// One problem's descriptors and algorithm. Row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T, so cuBLASLt's A is our B and its B our A (as in blas.hip), and the
// bias runs along the rows of its D: our columns, n of them.
struct Plan {
  Opaque desc = nullptr, a = nullptr, b = nullptr, c = nullptr;
  AlgoResult algo{};
  bool ok = false;

  Plan(Opaque handle, const GemmArgs& g, size_t bytes) {
    const Lib& l = lib();
    const int compute = g.tf32 && g.ab_type == DType::f32 ? kComputeF32FastTF32 : kComputeF32;
    const int32_t op_a = g.trans_b ? 1 : 0, op_b = g.trans_a ? 1 : 0;
    const uint32_t epilogue = g.relu ? kEpilogueReluBias : kEpilogueBias;
    const int ab = data_type(g.ab_type);
    Opaque pref = nullptr;
    int found = 0;
    ok = l.desc_create(&desc, compute, kR32F) == 0 &&
         l.desc_set(desc, kDescTransA, &op_a, sizeof op_a) == 0 &&
         l.desc_set(desc, kDescTransB, &op_b, sizeof op_b) == 0 &&
         l.desc_set(desc, kDescEpilogue, &epilogue, sizeof epilogue) == 0 &&
         l.layout_create(&a, ab, g.trans_b ? g.k : g.n, g.trans_b ? g.n : g.k, g.ldb) == 0 &&
         l.layout_create(&b, ab, g.trans_a ? g.m : g.k, g.trans_a ? g.k : g.m, g.lda) == 0 &&
         l.layout_create(&c, data_type(g.c_type), g.n, g.m, g.ldc) == 0 &&
         l.pref_create(&pref) == 0;
    const uint64_t limit = bytes;
    ok = ok && l.pref_set(pref, kPrefMaxWorkspace, &limit, sizeof limit) == 0 &&
         l.heuristic(handle, desc, a, b, c, c, pref, 1, &algo, &found) == 0 && found > 0 &&
         algo.state == 0;
    if (pref) l.pref_destroy(pref);
  }

  ~Plan() {
    const Lib& l = lib();
    if (desc) l.desc_destroy(desc);
    for (Opaque layout : {a, b, c})
      if (layout) l.layout_destroy(layout);
  }
};

}  // namespace

struct LtGemms::Impl {
  Opaque handle = nullptr;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int>,
           std::unique_ptr<Plan>>
      plans;
};

LtGemms::LtGemms() : impl_(std::make_unique<Impl>()) {
  if (lib().ok && lib().create(&impl_->handle) != 0) impl_->handle = nullptr;
}

LtGemms::~LtGemms() {
  impl_->plans.clear();
  if (impl_->handle) lib().destroy(impl_->handle);
}

bool LtGemms::run(const GemmArgs& g, hipStream_t stream, void* workspace, size_t bytes) {
  if (!impl_->handle || g.batch != 1 || !g.bias || g.beta != 0.f) return false;
  const auto key = std::make_tuple(g.m, g.n, g.k, g.lda, g.ldb, g.ldc,
                                   static_cast<int>(g.ab_type) * 16 + static_cast<int>(g.c_type),
                                   (g.trans_a ? 1 : 0) | (g.trans_b ? 2 : 0) | (g.tf32 ? 4 : 0),
                                   g.relu ? 1 : 0);
  std::unique_ptr<Plan>& plan = impl_->plans[key];
  if (!plan) plan = std::make_unique<Plan>(impl_->handle, g, bytes);
  if (!plan->ok) return false;
  const Lib& l = lib();
  const void* bias = g.bias;
  if (l.desc_set(plan->desc, kDescBiasPointer, &bias, sizeof bias) != 0) return false;
  const float zero = 0.f;
  const int status = l.matmul(impl_->handle, plan->desc, &g.alpha, g.b, plan->a, g.a, plan->b,
                              &zero, g.c, plan->c, g.c, plan->c, plan->algo.algo, workspace, bytes,
                              stream);
  if (status != 0)
    throw std::runtime_error("cublasLtMatmul failed (status " + std::to_string(status) + ")");
  lt_calls.fetch_add(1);
  return true;
}
#else
struct LtGemms::Impl {};
LtGemms::LtGemms() = default;
LtGemms::~LtGemms() = default;
bool LtGemms::run(const GemmArgs&, hipStream_t, void*, size_t) { return false; }
#endif  // NVIDIA

}  // namespace gpu
}  // namespace graphkiln
