// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The register program the "Pointwise" kernel runs (lower_pointwise.py writes it): each
// instruction reads up to three registers and writes one, over a tile of n elements, in
// float or double. The opcodes and their meaning: src/core/pointwise_ops.def (Python reads
// the same table through _core.pointwise_ops()).
#pragma once

#include <cstdint>

#include "core/pointwise_ops.hpp"  // PwOp: the opcodes of src/core/pointwise_ops.def

namespace graphkiln {

struct PwInstr {
  int32_t op, dst, a, b, c;
  double p0, p1;
};

// regs[r] points at n values of register r (inputs may point straight into tensors).
void pw_eval_f32(const PwInstr* prog, int count, float* const* regs, int64_t n);
void pw_eval_f64(const PwInstr* prog, int count, double* const* regs, int64_t n);

}  // namespace graphkiln
