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
  explicit CopyKernel(const KernelSpec& spec) : in_(spec.inputs[0]), out_(spec.outputs[0]) {}
  void run(const void* const* inputs, void* const* outputs) override {
    strided_copy(inputs[0], outputs[0], dtype_size(in_.dtype), out_.dims, in_.strides,
                 out_.strides);
  }

 private:
  TensorInfo in_, out_;
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
