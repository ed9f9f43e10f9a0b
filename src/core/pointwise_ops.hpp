// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The pointwise opcodes (k<Name>, numbered in the order of pointwise_ops.def) and, for a back
// end that has defined GK_PW_FN and its gk_* math in the enclosing namespace, one functor per
// opcode: PwFn<Name>::eval<T>(a, b, c, p0, p1) (GK_POINTWISE_FUNCTORS below).
#pragma once

#include <cstdint>

namespace graphkiln {

enum PwOp : int32_t {
#define GK_POINTWISE(Name, ...) k##Name,
#include "core/pointwise_ops.def"
#undef GK_POINTWISE
  kNumOps
};

}  // namespace graphkiln

// Expands to `struct PwFn<Name> { kArity; template <T> eval(a, b, c, p0, p1); }` per opcode.
// Use inside the back end's namespace, after GK_PW_FN (the function qualifiers: `inline`, or
// `__device__ __forceinline__`) and the gk_* math the expressions call.
#define GK_POINTWISE_FUNCTOR(Name, arity, ir_op, p0_attr, p1_attr, result, ...) \
  struct PwFn##Name { \
    static constexpr int kArity = arity; \
    template <typename T> \
    static GK_PW_FN T eval(T a, T b, T c, T p0, T p1) { \
      (void)a; \
      (void)b; \
      (void)c; \
      (void)p0; \
      (void)p1; \
      return (__VA_ARGS__); \
    } \
  };
