// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Gemm: one (batched) matrix product through the BLAS interface: float32, float16 or bfloat16
// operands and result of the same type (float32 accumulation); attribute fast_math=1 lets
// float32 products use TF32. The lowering of Gemm and MatMul computes every argument
// (transposes, leading dims, batch strides, alpha, beta); a non-zero beta accumulates into
// the output, which the lowering pre-filled with C, or which this kernel fills with its
// optional input 2, a row vector of n elements (a bias) repeated over the m rows. With
// attribute epilogue=1, input 2 is instead added after the product (beta 0), followed by ReLU
// when relu=1: one cuBLASLt call with its bias epilogue on NVIDIA (blas_lt.hip), else the
// product and an epilogue kernel.
#include "gpu/common.hpp"

#include "gpu/blas.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

// c[b][row][0..n) = bias[0..n): one block per (batch, row)
template <typename T>
__global__ void fill_rows(T* c, const T* bias, int64_t m, int64_t n, int64_t ldc,
                          int64_t stride_c) {
  const int64_t row = blockIdx.x % m, b = blockIdx.x / m;
  T* out = c + b * stride_c + row * ldc;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) out[j] = bias[j];
}

class Gemm : public Kernel {
 public:
  explicit Gemm(const KernelSpec& spec) {
    g_.ab_type = spec.inputs.at(0).dtype;
    g_.c_type = spec.outputs.at(0).dtype;
    if (spec.inputs.at(1).dtype != g_.ab_type || g_.c_type != g_.ab_type ||
        !Blas::supports(g_.ab_type, g_.c_type))
      spec_error(spec, "needs float32, float16 or bfloat16 operands and result of one type");
    const Attrs& a = spec.attrs;
    g_.tf32 = a.get_int("fast_math", 0) != 0;
    g_.trans_a = a.get_int("trans_a", 0) != 0;
    g_.trans_b = a.get_int("trans_b", 0) != 0;
    g_.m = a.get_int("m");
    g_.n = a.get_int("n");
    g_.k = a.get_int("k");
    g_.batch = a.get_int("batch", 1);
    g_.lda = a.get_int("lda");
    g_.ldb = a.get_int("ldb");
    g_.ldc = a.get_int("ldc");
    g_.stride_a = a.get_int("stride_a", 0);
    g_.stride_b = a.get_int("stride_b", 0);
    g_.stride_c = a.get_int("stride_c", 0);
    g_.alpha = static_cast<float>(a.get_float("alpha", 1.0));
    g_.beta = static_cast<float>(a.get_float("beta", 0.0));
    epilogue_ = a.get_int("epilogue", 0) != 0;
    relu_ = a.get_int("relu", 0) != 0;
    if ((epilogue_ || relu_) && (!spec.has_input(2) || g_.beta != 0.f))
      spec_error(spec, "epilogue=1 / relu=1 need input 2 (the bias) and beta 0");
    has_rows_ = spec.has_input(2);
    if (has_rows_ && (spec.inputs[2].dtype != g_.c_type || spec.inputs[2].numel() != g_.n ||
                      !spec.inputs[2].is_contiguous()))
      spec_error(spec, "input 2 must be a contiguous row of n elements of the result's type");
    if (has_rows_ && g_.m * g_.batch >= (int64_t{1} << 31))
      spec_error(spec, "more than 2^31 rows to fill");
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    GemmArgs g = g_;
    g.a = inputs[0];
    g.b = inputs[1];
    g.c = outputs[0];
    if (epilogue_) {  // C = A B + bias (then ReLU): one cuBLASLt call where it can
      g.bias = inputs[2];
      g.relu = relu_;
      return ctx.blas->gemm_epilogue(g);
    }
    if (has_rows_ && g.m > 0 && g.n > 0 && g.batch > 0) {
      int threads = 32;
      while (threads < 256 && threads < g.n) threads *= 2;
      dispatch_float(g.c_type, [&](auto t) {
        using T = decltype(t);
        fill_rows<T><<<static_cast<unsigned>(g.m * g.batch), threads, 0, ctx.stream>>>(
            static_cast<T*>(outputs[0]), static_cast<const T*>(inputs[2]), g.m, g.n, g.ldc,
            g.stride_c);
      });
      check_launch("fill_rows");
    }
    ctx.blas->gemm(g);
  }

 private:
  GemmArgs g_;
  bool has_rows_ = false, epilogue_ = false, relu_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_gemm(const KernelSpec& spec) { return std::make_unique<Gemm>(spec); }

}  // namespace gpu
}  // namespace graphkiln
