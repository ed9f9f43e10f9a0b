// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Gemm: one (batched) matrix product through the BLAS interface: float32, float16 or bfloat16
// operands and result of the same type (float32 accumulation); attribute fast_math=1 lets
// float32 products use TF32. The lowering of Gemm and MatMul computes every argument
// (transposes, leading dims, batch strides, alpha, beta); a non-zero beta accumulates into
// the output, which the lowering pre-filled with C.
#include "gpu/common.hpp"

#include "gpu/blas.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

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
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) override {
    GemmArgs g = g_;
    g.a = inputs[0];
    g.b = inputs[1];
    g.c = outputs[0];
    ctx.blas->gemm(g);
  }

 private:
  GemmArgs g_;
};

}  // namespace

std::unique_ptr<Kernel> make_gemm(const KernelSpec& spec) { return std::make_unique<Gemm>(spec); }

}  // namespace gpu
}  // namespace graphkiln
