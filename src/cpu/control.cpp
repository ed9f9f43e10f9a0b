// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Control steps: an If compiled in line in its plan (targets/native/lower_control.py).
//   Branch (input: the bool condition; attr target): falls through into the then-branch's
//     steps when the condition holds, else goes on at step `target` (the else-branch's);
//   Jump (attr target): goes on at step `target` (past the else-branch), ending the
//     then-branch.
// They compute nothing: the executor asks next_step after run (core/executor.cpp).
#include <cstdint>

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

}  // namespace graphkiln
