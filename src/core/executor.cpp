// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "core/executor.hpp"

#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace graphkiln {

namespace {
constexpr size_t kArenaAlign = 64;

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

Executor::Executor(std::vector<StepSpec> steps, std::vector<const void*> constants,
                   int64_t arena_bytes, int num_threads, const StorageBytes& sizes)
    : constants_(std::move(constants)), arena_bytes_(arena_bytes), num_threads_(num_threads) {
  if (arena_bytes_ < 0) throw std::invalid_argument("negative arena size");
  if (sizes.checked && sizes.constants.size() != constants_.size())
    throw std::invalid_argument("constant sizes and constants differ in number");
  set_num_threads(num_threads_);
  steps_.reserve(steps.size());
  for (auto& s : steps) {
    if (s.inputs.size() != s.spec.inputs.size() || s.outputs.size() != s.spec.outputs.size())
      throw std::invalid_argument("step '" + s.spec.name + "': tensor references and "
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
      if (s.spec.has_input(i)) check_reference(s, s.spec.inputs[i], s.inputs[i], sizes, arena_bytes_);
    for (size_t i = 0; i < s.outputs.size(); ++i)
      check_reference(s, s.spec.outputs[i], s.outputs[i], sizes, arena_bytes_);
    Step step;
    StepPacking packing;
    packing.saved = std::move(s.saved_packing);
    // tuning: a step may run on its own thread count (attr "num_threads", see
    // graphkiln.tuning); oneDNN primitives are created and run under the same count
    step.threads = s.spec.num_threads;
    if (step.threads != num_threads_) set_num_threads(step.threads);
    try {
      PackingScope scope(&packing);
      step.kernel = make_kernel(s.spec);
    } catch (...) {
      set_num_threads(num_threads_);
      throw;
    }
    if (step.threads != num_threads_) set_num_threads(num_threads_);
    step.packed = std::move(packing.packed);
    reused_packings_ += packing.reused;
    step.kernel_name = s.spec.kernel;
    step.node_name = s.spec.name;
    step.inputs = std::move(s.inputs);
    step.outputs = std::move(s.outputs);
    step.present = s.spec.present;
    step.present.resize(step.inputs.size(), true);
    step.in_ptrs.resize(step.inputs.size());
    step.out_ptrs.resize(step.outputs.size());
    steps_.push_back(std::move(step));
  }
  // last: a step refused above must not leave the arena behind (no destructor runs then)
  if (arena_bytes_ > 0) {
    const size_t size = (static_cast<size_t>(arena_bytes_) + kArenaAlign - 1) / kArenaAlign *
                        kArenaAlign;
    arena_ = static_cast<unsigned char*>(std::aligned_alloc(kArenaAlign, size));
    if (!arena_)
      throw std::bad_alloc();
  }
}

Executor::~Executor() { std::free(arena_); }

void Executor::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  set_num_threads(num_threads_);
  auto resolve = [&](const TensorRef& r) -> unsigned char* {
    switch (r.storage) {
      case Storage::arena: return arena_ + r.offset;
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
  for (Step& step : steps_) {
    for (size_t i = 0; i < step.inputs.size(); ++i)
      step.in_ptrs[i] = step.present[i] ? resolve(step.inputs[i]) : nullptr;
    for (size_t i = 0; i < step.outputs.size(); ++i) step.out_ptrs[i] = resolve(step.outputs[i]);
    const bool own_threads = step.threads != num_threads_;  // tuned thread count
    if (own_threads) set_num_threads(step.threads);
    if (!profiling_) {
      step.kernel->run(step.in_ptrs.data(), step.out_ptrs.data());
    } else {
      const auto start = std::chrono::steady_clock::now();
      step.kernel->run(step.in_ptrs.data(), step.out_ptrs.data());
      step.total_ms += std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start).count();
      step.runs += 1;
    }
    if (own_threads) set_num_threads(num_threads_);
  }
}

std::vector<Executor::StepTime> Executor::step_times() const {
  std::vector<StepTime> out;
  for (const Step& step : steps_) out.push_back({step.kernel_name, step.node_name, step.total_ms, step.runs});
  return out;
}

void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

int max_threads() { return omp_get_max_threads(); }

}  // namespace graphkiln
