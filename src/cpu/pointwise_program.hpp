// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The register program the "Pointwise" kernel runs (lower_pointwise.py writes it): each
// instruction reads up to three registers and writes one, over a tile of n elements, in
// float or double. Keep the opcode numbers in sync with lower_pointwise.py OPCODES.
#pragma once

#include <cstdint>

namespace graphkiln {

enum PwOp : int32_t {
  kMov, kConst, kAdd, kSub, kMul, kDiv, kDivInt, kPow, kModFloor, kFmod, kMax, kMin,
  kNeg, kAbs, kExp, kLog, kSqrt, kRecip, kFloor, kCeil, kRound, kSign, kSin, kCos, kTan,
  kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh, kTanh, kSigmoid, kErf,
  kRelu, kLeakyRelu, kElu, kSelu, kCelu, kHardSigmoid, kHardSwish, kSoftplus, kSoftsign,
  kGelu, kGeluTanh, kMish, kSwish, kThresholdedRelu, kPRelu, kShrink,
  kEqual, kLess, kLessEqual, kGreater, kGreaterEqual, kAnd, kOr, kXor, kNot, kIsNaN, kIsInf,
  kWhere, kToF16, kToBF16, kToF32, kToInt, kToBool, kMulAdd,
  kNumOps
};

struct PwInstr {
  int32_t op, dst, a, b, c;
  double p0, p1;
};

// regs[r] points at n values of register r (inputs may point straight into tensors).
void pw_eval_f32(const PwInstr* prog, int count, float* const* regs, int64_t n);
void pw_eval_f64(const PwInstr* prog, int count, double* const* regs, int64_t n);

}  // namespace graphkiln
