// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Runs a plan: a flat list of kernel calls whose tensors live in one arena (taken from an
// ArenaPool for each run), in constants, in the caller's input buffers or in the caller's
// output buffers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/arena_pool.hpp"
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

// Runs of one Executor may overlap: everything a run writes (the kernels' pointer tables
// and scratch, the profiling sums) lives in an execution context taken from the executor's
// pool for the run and given back after it, and its arena is a buffer of the arena pool,
// likewise taken for the run. What runs share is read-only
// after construction: the constants, the packed constants (oneDNN weights, packed once by
// context 0 and handed to every later context's kernels as they are), the plan. The pool
// starts with one context (built in the constructor, so build errors surface there) and
// grows on demand up to max_contexts; callers beyond that wait for a context. Every context
// runs with the same thread counts, so a result never depends on which context ran it.
// A process-wide budget of cores (set_core_budget) keeps concurrent runs, of one executor
// or of several, from oversubscribing the cores: a run holds as many cores as it has
// threads, and a run that would exceed the budget waits until cores are free.
//
// Building behind (build_behind, for plans made when a run first meets a shape): when the
// budget has a core beyond what a run needs, the constructor builds the light steps and
// the first heavy one (oneDNN primitives: a JIT compile each) and returns; a worker thread
// on the spare core builds the other heavy steps in step order while the first run goes
// on, and that run waits for (or builds itself) a step that is not ready when it gets
// there. The plan is the same as a plan built at once: every kernel is built with the
// same thread count and packing; only where a build error surfaces differs (the first run
// that reaches the step throws it). packed_constants, reused_packings and later contexts
// wait for the whole build.
class Executor {
 public:
  // constants[i] must stay valid for the executor's life (the binding keeps them).
  // arenas: where runs take their arena (a program's plans share one pool); null: a pool of
  // this executor's own
  Executor(std::vector<StepSpec> steps, std::vector<const void*> constants, int64_t arena_bytes,
           int num_threads, const StorageBytes& sizes = {}, int max_contexts = 1,
           std::shared_ptr<ArenaPool> arenas = nullptr, bool build_behind = false);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Safe to call from several threads at once.
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);

  // Profiling: when on, run() adds each step's wall time to its total.
  struct StepTime {
    std::string kernel, name;
    double total_ms = 0;
    int64_t runs = 0;
  };
  void set_profiling(bool on) { profiling_ = on; }
  std::vector<StepTime> step_times() const;  // summed over the contexts
  int64_t arena_bytes() const { return arena_bytes_; }
  size_t num_steps() const { return templates_.size(); }
  int num_threads() const { return num_threads_; }
  int max_contexts() const { return max_contexts_; }
  int contexts_created() const;
  // What step i's kernel packed (empty for kernels that pack nothing); waits for a build
  // going on behind.
  const std::vector<PackedConstant>& packed_constants(size_t i);
  int64_t reused_packings();
  // Waits until every kernel of the first context is built (or failed to build), helping
  // to build what is left.
  void wait_built();
  // Whether this executor's first context was built behind its first run.
  bool built_behind() const { return behind_ != nullptr; }

 private:
  // What building step i's kernel again needs, kept after construction.
  struct StepTemplate {
    KernelSpec spec;
    std::vector<TensorRef> inputs, outputs;
    std::vector<bool> present;  // per input: false where absent (pointer null)
    bool control = false;       // a Branch / Jump: the next step is the kernel's to say
    int threads = 0;  // OpenMP threads while this step builds and runs
    std::vector<PackedConstant> packed;  // what context 0's kernel packed
    double total_ms = 0;  // profiling, guarded by profile_mutex_
    int64_t runs = 0;
  };
  struct Step {
    std::unique_ptr<Kernel> kernel;
    std::vector<const void*> in_ptrs;
    std::vector<void*> out_ptrs;
  };
  struct Context {
    std::vector<Step> steps;
  };
  class Lease;
  struct BehindBuild;  // executor.cpp: the state of a build going on behind the first run

  std::unique_ptr<Context> build_context(std::vector<std::vector<PackedConstant>> saved,
                                         bool first);
  bool start_behind_build(std::vector<std::vector<PackedConstant>>& saved);
  void build_behind_step(size_t k);
  void keep_packing(size_t i, StepPacking& packing);
  void ensure_built(size_t step);
  void build_step(size_t i, int default_threads, StepPacking& packing,
                  std::unique_ptr<Kernel>& kernel) const;
  Context* acquire();
  void release(Context* context);
  void run_in(Context& context, unsigned char* arena, const std::vector<const void*>& inputs,
              const std::vector<void*>& outputs);

  std::atomic<bool> profiling_{false};
  std::vector<StepTemplate> templates_;
  std::vector<const void*> constants_;
  int64_t arena_bytes_;
  std::shared_ptr<ArenaPool> arenas_;  // each run's arena, taken for the run
  int num_threads_;
  int max_contexts_;
  int cores_needed_ = 1;  // the most threads any step runs with
  int64_t reused_packings_ = 0;

  mutable std::mutex profile_mutex_;
  mutable std::mutex pool_mutex_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<Context>> contexts_;  // guarded by pool_mutex_
  std::vector<Context*> free_;                       // guarded by pool_mutex_
  int building_ = 0;  // contexts being built outside the lock, guarded by pool_mutex_

  std::atomic<bool> built_{true};  // false while a build goes on behind (behind_)
  std::unique_ptr<BehindBuild> behind_;
};

// The cores concurrent runs may hold at once, process-wide (default: the hardware threads;
// graphkiln sets the physical cores). Values below 1 are taken as 1.
void set_core_budget(int cores);
int core_budget();

void set_num_threads(int n);  // OpenMP threads of the calling thread
int max_threads();

}  // namespace graphkiln
