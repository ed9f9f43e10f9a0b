// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Runs a plan: a flat list of kernel calls whose tensors live in one arena (allocated
// once), in constants, in the caller's input buffers or in the caller's output buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel.hpp"

namespace graphkiln {

enum class Storage : int { arena = 0, constant = 1, input = 2, output = 3 };

struct TensorRef {
  Storage storage = Storage::arena;
  int64_t index = 0;   // constant / input / output number
  int64_t offset = 0;  // bytes from the start of that storage
};

struct StepSpec {
  KernelSpec spec;
  std::vector<TensorRef> inputs;   // one per spec.inputs (ignored where absent)
  std::vector<TensorRef> outputs;
};

class Executor {
 public:
  // constants[i] must stay valid for the executor's life (the binding keeps them).
  Executor(std::vector<StepSpec> steps, std::vector<const void*> constants,
           int64_t arena_bytes, int num_threads);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);

  // Profiling: when on, run() adds each step's wall time to its total.
  struct StepTime {
    std::string kernel, name;
    double total_ms = 0;
    int64_t runs = 0;
  };
  void set_profiling(bool on) { profiling_ = on; }
  std::vector<StepTime> step_times() const;
  int64_t arena_bytes() const { return arena_bytes_; }
  size_t num_steps() const { return steps_.size(); }
  int num_threads() const { return num_threads_; }

 private:
  struct Step {
    std::unique_ptr<Kernel> kernel;
    std::vector<TensorRef> inputs, outputs;
    std::vector<bool> present;
    std::vector<const void*> in_ptrs;
    std::vector<void*> out_ptrs;
    std::string kernel_name, node_name;
    double total_ms = 0;
    int64_t runs = 0;
    int threads = 0;  // OpenMP threads while this step builds and runs
  };
  bool profiling_ = false;
  std::vector<Step> steps_;
  std::vector<const void*> constants_;
  int64_t arena_bytes_;
  unsigned char* arena_ = nullptr;
  int num_threads_;
};

void set_num_threads(int n);  // OpenMP threads of the calling thread
int max_threads();

}  // namespace graphkiln
