// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Control steps: an If compiled in line in its plan (targets/native/lower_control.py).
//   Branch (input: the bool condition; attr target): falls through into the then-branch's
//     steps when the condition holds, else goes on at step `target` (the else-branch's);
//   Jump (attr target): goes on at step `target` (past the else-branch), ending the
//     then-branch.
//   LoopTest (inputs: iteration number i64, condition bool, trip count M i64 or absent;
//     attr target): a Loop compiled in line goes on into its body while the condition
//     holds and the iteration number is below M, else at step `target` (past the loop);
//   LoopNext (inputs: the iteration number, then the values the body reads from outside,
//     listed so that the arena keeps them to the loop's end; output: the iteration number;
//     attr target): adds one to the iteration number and goes back to step `target` (the
//     LoopTest).
// Branch / Jump / LoopTest compute nothing; the executor asks next_step after run
// (core/executor.cpp).
#include <cstdint>
#include <string>

#include "core/kernel.hpp"

namespace graphkiln {
namespace {

class BranchKernel : public Kernel {
 public:
  explicit BranchKernel(int64_t target) : target_(target) {}
  void run(const void* const*, void* const*) override {}
  int64_t next_step(const void* const* inputs) const override {
    return *static_cast<const uint8_t*>(inputs[0]) != 0 ? -1 : target_;
  }

 private:
  int64_t target_;
};

class JumpKernel : public Kernel {
 public:
  explicit JumpKernel(int64_t target) : target_(target) {}
  void run(const void* const*, void* const*) override {}
  int64_t next_step(const void* const*) const override { return target_; }

 private:
  int64_t target_;
};

class LoopTestKernel : public Kernel {
 public:
  explicit LoopTestKernel(int64_t target) : target_(target) {}
  void run(const void* const*, void* const*) override {}
  int64_t next_step(const void* const* inputs) const override {
    const int64_t iteration = *static_cast<const int64_t*>(inputs[0]);
    const bool go_on =
        *static_cast<const uint8_t*>(inputs[1]) != 0 &&
        (inputs[2] == nullptr || iteration < *static_cast<const int64_t*>(inputs[2]));
    return go_on ? -1 : target_;
  }

 private:
  int64_t target_;
};

class LoopNextKernel : public Kernel {
 public:
  explicit LoopNextKernel(int64_t target) : target_(target) {}
  void run(const void* const* inputs, void* const* outputs) override {
    *static_cast<int64_t*>(outputs[0]) = *static_cast<const int64_t*>(inputs[0]) + 1;
  }
  int64_t next_step(const void* const*) const override { return target_; }

 private:
  int64_t target_;
};

void check_scalar(const KernelSpec& spec, size_t i, DType dtype, const char* what) {
  if (spec.inputs[i].dtype != dtype || spec.inputs[i].numel() != 1)
    spec_error(spec, std::string(what) + " must be one " + dtype_name(dtype));
}

std::unique_ptr<Kernel> make_loop_test(const KernelSpec& spec) {
  if (spec.inputs.size() != 3 || !spec.outputs.empty())
    spec_error(spec, "inputs: iteration number, condition, trip count (or absent); no outputs");
  check_scalar(spec, 0, DType::i64, "the iteration number");
  check_scalar(spec, 1, DType::boolean, "the condition");
  if (spec.has_input(2)) check_scalar(spec, 2, DType::i64, "the trip count");
  return std::make_unique<LoopTestKernel>(spec.attrs.get_int("target"));
}

std::unique_ptr<Kernel> make_loop_next(const KernelSpec& spec) {
  if (spec.inputs.empty() || spec.outputs.size() != 1)
    spec_error(spec, "the iteration number (and values kept alive) in, the iteration number out");
  check_scalar(spec, 0, DType::i64, "the iteration number");
  if (spec.outputs[0].dtype != DType::i64 || spec.outputs[0].numel() != 1)
    spec_error(spec, "the output must be the iteration number (one i64)");
  return std::make_unique<LoopNextKernel>(spec.attrs.get_int("target"));
}

std::unique_ptr<Kernel> make_branch(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || !spec.outputs.empty())
    spec_error(spec, "one input (the condition) and no outputs");
  if (spec.inputs[0].dtype != DType::boolean || spec.inputs[0].numel() != 1)
    spec_error(spec, "the condition must be one bool");
  return std::make_unique<BranchKernel>(spec.attrs.get_int("target"));
}

std::unique_ptr<Kernel> make_jump(const KernelSpec& spec) {
  if (!spec.inputs.empty() || !spec.outputs.empty()) spec_error(spec, "no inputs or outputs");
  return std::make_unique<JumpKernel>(spec.attrs.get_int("target"));
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Branch", make_branch);
GRAPHKILN_REGISTER_KERNEL("Jump", make_jump);
GRAPHKILN_REGISTER_KERNEL("LoopTest", make_loop_test);
GRAPHKILN_REGISTER_KERNEL("LoopNext", make_loop_next);

}  // namespace graphkiln
