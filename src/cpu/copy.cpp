// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Copy": the output is the input in the output's layout (reorders between plain and
// channels-last data; views and constants that are graph outputs).
#include "core/kernel.hpp"
#include "cpu/strided_copy.hpp"

namespace graphkiln {
namespace {

class CopyKernel : public Kernel {
 public:
  explicit CopyKernel(const KernelSpec& spec)
      : copy_(dtype_size(spec.inputs[0].dtype), spec.outputs[0].dims, spec.inputs[0].strides,
              spec.outputs[0].strides) {}
  void run(const void* const* inputs, void* const* outputs) override {
    copy_.run(inputs[0], outputs[0]);
  }

 private:
  StridedCopy copy_;  // planned once
};

std::unique_ptr<Kernel> make_copy(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || spec.outputs.size() != 1)
    spec_error(spec, "takes one input and one output");
  if (spec.inputs[0].dims != spec.outputs[0].dims || spec.inputs[0].dtype != spec.outputs[0].dtype)
    spec_error(spec, "input and output differ in shape or dtype");
  return std::make_unique<CopyKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Copy", make_copy);

}  // namespace graphkiln
