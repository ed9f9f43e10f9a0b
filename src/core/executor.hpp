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

// A constant a kernel rearranged at build time into the layout its primitive wants (oneDNN
// weights): the layout as a key text (cpu/onednn_common.hpp writes it) and the bytes.
struct PackedConstant {
  std::string layout;
  const void* data = nullptr;
  int64_t nbytes = 0;
};

// The packing of one step while its kernel is built: the packed constants saved with a
// program (given back so that the kernel skips the reorder where the layout is the same, in
// the order the kernel packs them) and what the kernel packed (its data lives in the kernel).
struct StepPacking {
  std::vector<PackedConstant> saved;
  std::vector<PackedConstant> packed;
  int64_t reused = 0;  // how many saved packings the kernel took as they are
};

// The packing of the step whose kernel the calling thread is building (null outside
// Executor's constructor): kernels reach it through onednn_reorder_constant().
StepPacking* current_step_packing();

struct StepSpec {
  KernelSpec spec;
  std::vector<TensorRef> inputs;   // one per spec.inputs (ignored where absent)
  std::vector<TensorRef> outputs;
  std::vector<PackedConstant> saved_packing;  // see StepPacking; empty when compiling
};

// The byte sizes of the storages a plan refers to. When given (checked = true), the
// executor refuses any tensor reference that reaches outside its storage.
struct StorageBytes {
  bool checked = false;
  std::vector<int64_t> constants, inputs, outputs;
};

class Executor {
 public:
  // constants[i] must stay valid for the executor's life (the binding keeps them).
  Executor(std::vector<StepSpec> steps, std::vector<const void*> constants,
           int64_t arena_bytes, int num_threads, const StorageBytes& sizes = {});
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
  // What step i's kernel packed (empty for kernels that pack nothing).
  const std::vector<PackedConstant>& packed_constants(size_t i) const { return steps_.at(i).packed; }
  int64_t reused_packings() const { return reused_packings_; }

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
    std::vector<PackedConstant> packed;
  };
  bool profiling_ = false;
  std::vector<Step> steps_;
  std::vector<const void*> constants_;
  int64_t arena_bytes_;
  unsigned char* arena_ = nullptr;
  int num_threads_;
  int64_t reused_packings_ = 0;
};

void set_num_threads(int n);  // OpenMP threads of the calling thread
int max_threads();

}  // namespace graphkiln
