// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The CPU kernel interface and the registry the executor builds kernels from.
//
// A kernel is built once per plan step from a KernelSpec (shapes are static: the Python
// side specializes a plan per input shape), may pack constant inputs then, and runs many
// times on raw pointers. run() must not throw from inside an OpenMP region; validate in
// the factory instead (a factory error names the step and stops the compile).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/attrs.hpp"
#include "core/tensor.hpp"

namespace graphkiln {

struct KernelSpec {
  std::string kernel;               // registry name, e.g. "Conv", "Pointwise"
  std::string name;                 // the IR node it came from, for messages
  std::vector<TensorInfo> inputs;   // absent optional inputs have dtype f32 and rank 0
  std::vector<bool> present;        // false where the IR input was absent
  std::vector<TensorInfo> outputs;
  Attrs attrs;
  int num_threads = 1;

  bool has_input(size_t i) const { return i < present.size() && present[i]; }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs[i] is null for an absent optional input
  virtual void run(const void* const* inputs, void* const* outputs) = 0;
  // Control steps (src/cpu/control.cpp: Branch, Jump) say which step runs next, read after
  // run() from the same inputs; -1 (every other kernel) means the one after this.
  virtual int64_t next_step(const void* const* /*inputs*/) const { return -1; }
};

// Registry names of the control steps, whose next_step the executor asks after each run.
bool is_control_kernel(const std::string& name);

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelSpec&)>;

bool register_kernel(const std::string& name, KernelFactory factory);
std::unique_ptr<Kernel> make_kernel(const KernelSpec& spec);  // throws, naming the step
std::vector<std::string> registered_kernels();

// Build-time check helper: throws std::invalid_argument("<kernel> <node>: message").
[[noreturn]] void spec_error(const KernelSpec& spec, const std::string& message);

}  // namespace graphkiln

#define GK_CONCAT_INNER(a, b) a##b
#define GK_CONCAT(a, b) GK_CONCAT_INNER(a, b)
// GRAPHKILN_REGISTER_KERNEL("Relu", make_relu);  at namespace scope in a src/cpu file
#define GRAPHKILN_REGISTER_KERNEL(NAME, FACTORY) \
  static const bool GK_CONCAT(gk_registered_, __LINE__) = \
      ::graphkiln::register_kernel(NAME, FACTORY)
