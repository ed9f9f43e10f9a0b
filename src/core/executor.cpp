// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "core/executor.hpp"

#include <omp.h>

#include <chrono>
#include <exception>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <thread>

namespace graphkiln {

namespace {

thread_local StepPacking* current_packing = nullptr;

// Sets the packing of the step being built for the calling thread, and clears it again.
class PackingScope {
 public:
  explicit PackingScope(StepPacking* packing) { current_packing = packing; }
  ~PackingScope() { current_packing = nullptr; }
  PackingScope(const PackingScope&) = delete;
  PackingScope& operator=(const PackingScope&) = delete;
};

// The lowest and one past the highest byte a tensor of `t` at `offset` touches; false when
// the dims are negative or the sums overflow. An empty tensor touches nothing: [0, 0).
bool byte_extent(const TensorInfo& t, int64_t offset, int64_t* low, int64_t* high) {
  if (t.strides.size() != t.dims.size()) return false;
  bool empty = false;
  for (int64_t dim : t.dims) {
    if (dim < 0) return false;
    empty = empty || dim == 0;
  }
  if (empty) {  // touches nothing, wherever it is
    *low = *high = 0;
    return true;
  }
  int64_t min_el = 0, max_el = 0;
  for (size_t d = 0; d < t.dims.size(); ++d) {
    int64_t reach = 0;
    if (__builtin_mul_overflow(t.dims[d] - 1, t.strides[d], &reach)) return false;
    if (__builtin_add_overflow(reach < 0 ? min_el : max_el, reach, reach < 0 ? &min_el : &max_el))
      return false;
  }
  const auto size = static_cast<int64_t>(dtype_size(t.dtype));
  int64_t lo = 0, hi = 0;
  if (__builtin_add_overflow(max_el, 1, &hi) || __builtin_mul_overflow(hi, size, &hi) ||
      __builtin_mul_overflow(min_el, size, &lo) || __builtin_add_overflow(lo, offset, &lo) ||
      __builtin_add_overflow(hi, offset, &hi))
    return false;
  *low = lo;
  *high = hi;
  return true;
}

// Throws unless the tensor lies inside the storage `r` names (sizes.checked only).
// A control step's "target" must lie after it and at most one past the last step (the
// plans lower If in line: a forward Branch over the then-branch, a Jump over the else; a
// Loop's LoopTest jumps past the loop), except LoopNext's, which goes back to its LoopTest.
void check_jump_target(const KernelSpec& spec, size_t index, size_t num_steps) {
  const int64_t target = spec.attrs.get_int("target");
  if (spec.kernel == "LoopNext") {
    if (target < 0 || target >= static_cast<int64_t>(index))
      throw std::invalid_argument("step '" + spec.name + "' (LoopNext) jumps to step " +
                                  std::to_string(target) + ", not back to an earlier step");
    return;
  }
  if (target <= static_cast<int64_t>(index) || target > static_cast<int64_t>(num_steps))
    throw std::invalid_argument("step '" + spec.name + "' (" + spec.kernel + ") jumps to step " +
                                std::to_string(target) + ", not after it within the plan's " +
                                std::to_string(num_steps) + " steps");
}

void check_reference(const StepSpec& s, const TensorInfo& t, const TensorRef& r,
                     const StorageBytes& sizes, int64_t arena_bytes) {
  if (!sizes.checked) return;
  const std::vector<int64_t>* table = nullptr;
  switch (r.storage) {
    case Storage::arena: break;
    case Storage::constant: table = &sizes.constants; break;
    case Storage::input: table = &sizes.inputs; break;
    case Storage::output: table = &sizes.outputs; break;
    default: throw std::invalid_argument("step '" + s.spec.name + "': bad storage kind");
  }
  if (table && (r.index < 0 || r.index >= static_cast<int64_t>(table->size())))
    throw std::invalid_argument("step '" + s.spec.name + "': storage index " +
                                std::to_string(r.index) + " is out of range");
  const int64_t size = table ? (*table)[r.index] : arena_bytes;
  int64_t low = 0, high = 0;
  if (!byte_extent(t, r.offset, &low, &high) || low < 0 || high > size)
    throw std::invalid_argument("step '" + s.spec.name + "': a tensor reaches outside its " +
                                std::to_string(size) + "-byte storage");
}
}  // namespace

StepPacking* current_step_packing() { return current_packing; }

namespace {

// The process-wide budget of cores that runs hold while they execute. A run takes its cores
// as soon as they are free (no queue: a strict first-come order makes every hand-over wait
// for one particular thread to be scheduled, which cost a third of the throughput of eight
// callers on two cores). Runs of one process mostly ask for the same count
// (GRAPHKILN_NUM_THREADS), so nobody starves.
class CoreBudget {
 public:
  static CoreBudget& instance() {
    static CoreBudget budget;
    return budget;
  }
  void set_total(int cores) {
    std::lock_guard<std::mutex> lock(mutex_);
    total_ = cores < 1 ? 1 : cores;
    changed_.notify_all();
  }
  int total() {
    std::lock_guard<std::mutex> lock(mutex_);
    return total_;
  }
  int take(int wanted) {
    std::unique_lock<std::mutex> lock(mutex_);
    int cores = 0;
    changed_.wait(lock, [&] {
      cores = wanted < total_ ? wanted : total_;
      return used_ + cores <= total_;
    });
    used_ += cores;
    return cores;
  }
  // Up to `wanted` of the cores free now beyond `reserve` more (no wait): how many were
  // taken.
  int try_take(int wanted, int reserve = 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    int cores = total_ - used_ - reserve;
    if (cores > wanted) cores = wanted;
    if (cores < 0) cores = 0;
    used_ += cores;
    return cores;
  }
  void give(int cores) {
    if (cores == 0) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      used_ -= cores;
    }
    changed_.notify_all();  // waiters may ask for different counts
  }

 private:
  CoreBudget() {
    const unsigned hw = std::thread::hardware_concurrency();
    total_ = hw > 0 ? static_cast<int>(hw) : 1;
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  int total_ = 1, used_ = 0;
};

// Holds `wanted` cores of the budget (at most all of it) for its life.
class CoreLease {
 public:
  explicit CoreLease(int wanted) : cores_(CoreBudget::instance().take(wanted)) {}
  ~CoreLease() { CoreBudget::instance().give(cores_); }
  CoreLease(const CoreLease&) = delete;
  CoreLease& operator=(const CoreLease&) = delete;

 private:
  int cores_;
};

}  // namespace

// A context taken from the pool for one run, given back when the run ends (or throws).
class Executor::Lease {
 public:
  explicit Lease(Executor& e) : executor_(e), context_(e.acquire()) {}
  ~Lease() { executor_.release(context_); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Context& context() { return *context_; }

 private:
  Executor& executor_;
  Context* context_;
};

Executor::Executor(std::vector<StepSpec> steps, std::vector<const void*> constants,
                   int64_t arena_bytes, int num_threads, const StorageBytes& sizes,
                   int max_contexts, std::shared_ptr<ArenaPool> arenas, bool build_behind)
    : constants_(std::move(constants)), arena_bytes_(arena_bytes),
      arenas_(arenas ? std::move(arenas) : std::make_shared<ArenaPool>()),
      num_threads_(num_threads), max_contexts_(max_contexts) {
  if (arena_bytes_ < 0) throw std::invalid_argument("negative arena size");
  if (max_contexts_ < 1) throw std::invalid_argument("max_contexts must be at least 1");
  if (sizes.checked && sizes.constants.size() != constants_.size())
    throw std::invalid_argument("constant sizes and constants differ in number");
  cores_needed_ = num_threads_ > 0 ? num_threads_ : 1;
  std::vector<std::vector<PackedConstant>> saved;
  templates_.reserve(steps.size());
  for (auto& s : steps) {
    if (s.inputs.size() != s.spec.inputs.size() || s.outputs.size() != s.spec.outputs.size())
      throw std::invalid_argument("step '" + s.spec.name +
                                  "': tensor references and "
                                  "descriptions differ in number");
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const TensorRef& r = s.inputs[i];
      if (s.spec.has_input(i) && r.storage == Storage::constant) {
        if (r.index < 0 || r.index >= static_cast<int64_t>(constants_.size()))
          throw std::invalid_argument("step '" + s.spec.name + "': bad constant index");
        s.spec.inputs[i].constant =
            static_cast<const unsigned char*>(constants_[r.index]) + r.offset;
      }
    }
    for (const TensorRef& r : s.outputs)
      if (r.storage == Storage::constant || r.storage == Storage::input)
        throw std::invalid_argument("step '" + s.spec.name + "' writes a constant or an input");
    for (size_t i = 0; i < s.inputs.size(); ++i)
      if (s.spec.has_input(i))
        check_reference(s, s.spec.inputs[i], s.inputs[i], sizes, arena_bytes_);
    for (size_t i = 0; i < s.outputs.size(); ++i)
      check_reference(s, s.spec.outputs[i], s.outputs[i], sizes, arena_bytes_);
    StepTemplate t;
    // tuning: a step may run on its own thread count (attr "num_threads", see
    // graphkiln.tuning); oneDNN primitives are created and run under the same count
    t.threads = s.spec.num_threads;
    if (t.threads > cores_needed_) cores_needed_ = t.threads;
    t.control = is_control_kernel(s.spec.kernel);
    if (t.control) check_jump_target(s.spec, templates_.size(), steps.size());
    t.present = s.spec.present;
    t.present.resize(s.inputs.size(), true);
    t.spec = std::move(s.spec);
    t.inputs = std::move(s.inputs);
    t.outputs = std::move(s.outputs);
    saved.push_back(std::move(s.saved_packing));
    templates_.push_back(std::move(t));
  }
  if (!(build_behind && start_behind_build(saved)))
    contexts_.push_back(build_context(std::move(saved), true));
  free_.push_back(contexts_.back().get());
}

// A build going on behind the first run (see the class comment): the steps left to the
// worker, claimed in step order by it, by the first run when it needs one nobody has
// claimed, or by wait_built().
struct Executor::BehindBuild {
  Context* context = nullptr;               // the first context, whose kernels these are
  std::vector<size_t> order;                // the steps built behind, in step order
  std::atomic<size_t> next{0};              // the next of `order` to claim
  std::atomic<bool> cancel{false};          // the executor is going away: claim no more
  int default_threads = 0;                  // as in build_context
  int cores = 0;                            // of the budget, held by the worker
  std::vector<StepPacking> packings;        // per step
  std::mutex mutex;
  std::condition_variable done;             // a step finished building
  std::vector<char> ready;                  // per step, guarded by mutex
  std::vector<std::exception_ptr> errors;   // per step, guarded by mutex
  size_t left = 0;                          // steps of `order` not finished, guarded by mutex
  std::thread worker;
};

Executor::~Executor() {
  if (behind_ && behind_->worker.joinable()) {
    behind_->cancel.store(true);
    behind_->worker.join();
  }
}

namespace {

// Kernels whose construction is costly (oneDNN convolution and matmul primitives: a JIT
// compile of a millisecond or so each): a plan with several of them builds them on a few
// threads at once (oneDNN primitive creation is thread-safe).
bool heavy_kernel(const std::string& kernel) {
  return kernel == "Conv" || kernel == "ConvTranspose" || kernel == "MatMul" || kernel == "Pool";
}

}  // namespace

// Builds step i's kernel on the calling thread with the OpenMP thread count it is built
// and run with (`default_threads`: the count of steps without their own); the thread's
// count is left at default_threads.
void Executor::build_step(size_t i, int default_threads, StepPacking& packing,
                          std::unique_ptr<Kernel>& kernel) const {
  const StepTemplate& t = templates_[i];
  const bool own = t.threads > 0 && t.threads != default_threads;
  if (own) set_num_threads(t.threads);
  try {
    PackingScope scope(&packing);
    kernel = make_kernel(t.spec);
  } catch (...) {
    if (own) set_num_threads(default_threads);
    throw;
  }
  if (own) set_num_threads(default_threads);
}

// Builds every step's kernel. The first context records what its kernels
// packed; later ones are given those packings, which their kernels take as they are.
// The first context's heavy kernels (heavy_kernel) are built on up to kMaxBuildThreads
// threads (the calling thread and helpers) when at least two heavy steps and two cores of
// the process-wide budget are free now (held, one per thread, while building; else the
// calling thread builds every kernel, in order, as runs of other plans hold the cores). Each
// kernel is built as it would be alone: with the same OpenMP thread count and packing, so
// the plan is the same whichever thread built which kernel. The first failing step's error
// (in step order) is the one thrown, as in a serial build.
std::unique_ptr<Executor::Context> Executor::build_context(
    std::vector<std::vector<PackedConstant>> saved, bool first) {
  constexpr int kMaxBuildThreads = 4;
  auto context = std::make_unique<Context>();
  const size_t n = templates_.size();
  set_num_threads(num_threads_);
  const int default_threads = max_threads();  // what steps without their own count use
  std::vector<StepPacking> packings(n);
  std::vector<std::unique_ptr<Kernel>> kernels(n);
  for (size_t i = 0; i < n; ++i)
    packings[i].saved = first ? std::move(saved[i]) : templates_[i].packed;

  std::vector<size_t> heavy;
  if (first)
    for (size_t i = 0; i < n; ++i)
      if (heavy_kernel(templates_[i].spec.kernel)) heavy.push_back(i);
  int cores = 0;  // of the budget, held while building: the calling thread's and helpers'
  if (heavy.size() >= 2) {
    cores = CoreBudget::instance().try_take(
        static_cast<int>(heavy.size() < kMaxBuildThreads ? heavy.size() : kMaxBuildThreads));
    if (cores < 2) {
      CoreBudget::instance().give(cores);
      cores = 0;
    }
  }
  if (cores == 0) {
    for (size_t i = 0; i < n; ++i) build_step(i, default_threads, packings[i], kernels[i]);
  } else {
    // heavy steps from a shared counter, by the helpers and (after the light steps) the
    // calling thread; errors kept per step, the first thrown once every step was tried
    std::vector<std::exception_ptr> errors(n);
    std::atomic<size_t> next{0};
    auto build_heavy = [&] {
      for (size_t k; (k = next.fetch_add(1)) < heavy.size();) {
        const size_t i = heavy[k];
        try {
          build_step(i, default_threads, packings[i], kernels[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    };
    std::vector<bool> is_heavy(n, false);
    for (size_t i : heavy) is_heavy[i] = true;
    {
      // joins the helpers and gives the cores back however this block is left
      struct Helpers {
        std::vector<std::thread> threads;
        int cores;
        ~Helpers() {
          for (std::thread& thread : threads) thread.join();
          CoreBudget::instance().give(cores);
        }
      } helpers{{}, cores};
      try {
        for (int h = 1; h < cores; ++h)
          helpers.threads.emplace_back([&] {
            set_num_threads(default_threads);
            build_heavy();
          });
      } catch (...) {  // no thread to be had: the calling thread builds what is left
      }
      for (size_t i = 0; i < n; ++i) {
        if (is_heavy[i]) continue;
        try {
          build_step(i, default_threads, packings[i], kernels[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
      build_heavy();
    }
    for (size_t i = 0; i < n; ++i)
      if (errors[i]) std::rethrow_exception(errors[i]);
  }

  context->steps.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const StepTemplate& t = templates_[i];
    if (first) keep_packing(i, packings[i]);
    Step step;
    step.kernel = std::move(kernels[i]);
    step.in_ptrs.resize(t.inputs.size());
    step.out_ptrs.resize(t.outputs.size());
    context->steps.push_back(std::move(step));
  }
  return context;
}

// What the first context's kernel of step i packed, kept for later contexts and callers.
void Executor::keep_packing(size_t i, StepPacking& packing) {
  templates_[i].packed = std::move(packing.packed);
  reused_packings_ += packing.reused;
}

// The behind build (build_behind), when a core beyond a run's is free now and the plan has
// heavy steps after its first: this thread builds the light steps and the first heavy one
// (the first run starts at once), a worker the rest. False (nothing done): build as usual.
bool Executor::start_behind_build(std::vector<std::vector<PackedConstant>>& saved) {
  const size_t n = templates_.size();
  std::vector<size_t> heavy;
  for (size_t i = 0; i < n; ++i)
    if (heavy_kernel(templates_[i].spec.kernel)) heavy.push_back(i);
  if (heavy.size() < 2) return false;
  const int cores = CoreBudget::instance().try_take(1, cores_needed_);
  if (cores == 0) return false;
  auto b = std::make_unique<BehindBuild>();
  b->cores = cores;
  set_num_threads(num_threads_);
  b->default_threads = max_threads();
  b->packings.resize(n);
  for (size_t i = 0; i < n; ++i) b->packings[i].saved = std::move(saved[i]);
  b->ready.assign(n, 1);
  b->errors.resize(n);
  b->order.assign(heavy.begin() + 1, heavy.end());
  for (size_t i : b->order) b->ready[i] = 0;
  b->left = b->order.size();
  auto context = std::make_unique<Context>();
  context->steps.resize(n);
  for (size_t i = 0; i < n; ++i) {
    context->steps[i].in_ptrs.resize(templates_[i].inputs.size());
    context->steps[i].out_ptrs.resize(templates_[i].outputs.size());
  }
  try {
    for (size_t i = 0; i < n; ++i)
      if (b->ready[i]) build_step(i, b->default_threads, b->packings[i], context->steps[i].kernel);
  } catch (...) {
    CoreBudget::instance().give(cores);
    throw;
  }
  for (size_t i = 0; i < n; ++i)
    if (b->ready[i]) keep_packing(i, b->packings[i]);
  b->context = context.get();
  contexts_.push_back(std::move(context));
  behind_ = std::move(b);
  built_.store(false, std::memory_order_release);
  try {
    behind_->worker = std::thread([this] {
      BehindBuild& w = *behind_;
      set_num_threads(w.default_threads);
      for (size_t k; !w.cancel.load() && (k = w.next.fetch_add(1)) < w.order.size();)
        build_behind_step(k);
      CoreBudget::instance().give(w.cores);
    });
  } catch (...) {  // no thread to be had: this thread builds the rest
    CoreBudget::instance().give(behind_->cores);
    wait_built();
  }
  return true;
}

// Builds behind_->order[k] (claimed by the caller) into the first context; the error, if
// any, is kept for the run that reaches the step. The last step to finish hands the
// packings to the templates, as build_context does.
void Executor::build_behind_step(size_t k) {
  BehindBuild& b = *behind_;
  const size_t i = b.order[k];
  std::exception_ptr error;
  try {
    build_step(i, b.default_threads, b.packings[i], b.context->steps[i].kernel);
  } catch (...) {
    error = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(b.mutex);
  b.errors[i] = error;
  b.ready[i] = 1;
  if (--b.left == 0) {
    bool failed = false;
    for (size_t j : b.order) {
      keep_packing(j, b.packings[j]);
      failed = failed || b.errors[j];
    }
    // a step that failed has no kernel: runs keep asking ensure_built, which throws
    if (!failed) built_.store(true, std::memory_order_release);
  }
  b.done.notify_all();
}

// The first run's wait for `step` (built behind): builds it, and any unclaimed step before
// it, on the calling thread rather than sit idle; rethrows its build error.
void Executor::ensure_built(size_t step) {
  BehindBuild& b = *behind_;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(b.mutex);
      if (b.ready[step]) {
        if (b.errors[step]) std::rethrow_exception(b.errors[step]);
        return;
      }
    }
    size_t k = b.next.load();
    if (k < b.order.size() && b.order[k] <= step) {  // unclaimed, and needed first
      if (b.next.compare_exchange_weak(k, k + 1)) build_behind_step(k);
      continue;
    }
    std::unique_lock<std::mutex> lock(b.mutex);  // the worker is building it
    b.done.wait(lock, [&] { return b.ready[step] != 0; });
  }
}

void Executor::wait_built() {
  if (built_.load(std::memory_order_acquire) || !behind_) return;
  BehindBuild& b = *behind_;
  for (size_t k; (k = b.next.fetch_add(1)) < b.order.size();) build_behind_step(k);
  std::unique_lock<std::mutex> lock(b.mutex);
  b.done.wait(lock, [&] { return b.left == 0; });
}

const std::vector<PackedConstant>& Executor::packed_constants(size_t i) {
  wait_built();
  return templates_.at(i).packed;
}

int64_t Executor::reused_packings() {
  wait_built();
  return reused_packings_;
}

Executor::Context* Executor::acquire() {
  std::unique_lock<std::mutex> lock(pool_mutex_);
  for (;;) {
    if (!free_.empty()) {
      Context* context = free_.back();
      free_.pop_back();
      return context;
    }
    if (static_cast<int>(contexts_.size()) + building_ < max_contexts_) {
      ++building_;  // build outside the lock: other runs go on meanwhile
      lock.unlock();
      std::unique_ptr<Context> fresh;
      try {
        wait_built();  // a later context takes the first one's packings
        fresh = build_context({}, false);
      } catch (...) {
        lock.lock();
        --building_;
        pool_cv_.notify_one();
        throw;
      }
      lock.lock();
      --building_;
      contexts_.push_back(std::move(fresh));
      return contexts_.back().get();
    }
    pool_cv_.wait(lock);
  }
}

void Executor::release(Context* context) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    free_.push_back(context);
  }
  pool_cv_.notify_one();
}

int Executor::contexts_created() const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  return static_cast<int>(contexts_.size());
}

void Executor::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  Lease lease(*this);
  CoreLease cores(cores_needed_);
  ArenaLease arena(*arenas_, static_cast<size_t>(arena_bytes_));
  run_in(lease.context(), arena.data(), inputs, outputs);
}

void Executor::run_in(Context& context, unsigned char* arena,
                      const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  set_num_threads(num_threads_);
  auto resolve = [&](const TensorRef& r) -> unsigned char* {
    switch (r.storage) {
      case Storage::arena: return arena + r.offset;
      case Storage::constant:
        return const_cast<unsigned char*>(static_cast<const unsigned char*>(constants_[r.index])) +
               r.offset;
      case Storage::input:
        return const_cast<unsigned char*>(static_cast<const unsigned char*>(inputs[r.index])) +
               r.offset;
      case Storage::output: return static_cast<unsigned char*>(outputs[r.index]) + r.offset;
    }
    return nullptr;
  };
  const bool profiling = profiling_.load(std::memory_order_relaxed);
  // the first context only (later ones are built once the first is complete)
  const bool behind = !built_.load(std::memory_order_acquire) && &context == behind_->context;
  std::vector<double> times;
  if (profiling) times.assign(templates_.size(), 0.0);
  // control steps (If branches and Loops, compiled in line) move `s` themselves
  const size_t n = templates_.size();
  for (size_t s = 0; s < n;) {
    const StepTemplate& t = templates_[s];
    Step& step = context.steps[s];
    if (behind) ensure_built(s);
    for (size_t i = 0; i < t.inputs.size(); ++i)
      step.in_ptrs[i] = t.present[i] ? resolve(t.inputs[i]) : nullptr;
    for (size_t i = 0; i < t.outputs.size(); ++i) step.out_ptrs[i] = resolve(t.outputs[i]);
    const bool own_threads = t.threads != num_threads_;  // tuned thread count
    if (own_threads) set_num_threads(t.threads);
    if (!profiling) {
      step.kernel->run(step.in_ptrs.data(), step.out_ptrs.data());
    } else {
      const auto start = std::chrono::steady_clock::now();
      step.kernel->run(step.in_ptrs.data(), step.out_ptrs.data());
      times[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count();
    }
    if (own_threads) set_num_threads(num_threads_);
    const int64_t next = t.control ? step.kernel->next_step(step.in_ptrs.data()) : -1;
    s = next >= 0 ? static_cast<size_t>(next) : s + 1;
  }
  if (profiling) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    for (size_t s = 0; s < templates_.size(); ++s) {
      templates_[s].total_ms += times[s];
      templates_[s].runs += 1;
    }
  }
}

std::vector<Executor::StepTime> Executor::step_times() const {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  std::vector<StepTime> out;
  for (const StepTemplate& t : templates_)
    out.push_back({t.spec.kernel, t.spec.name, t.total_ms, t.runs});
  return out;
}

void set_core_budget(int cores) { CoreBudget::instance().set_total(cores); }
int core_budget() { return CoreBudget::instance().total(); }

void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

int max_threads() { return omp_get_max_threads(); }

}  // namespace graphkiln
