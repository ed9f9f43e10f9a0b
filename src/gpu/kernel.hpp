// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The GPU kernel interface and its dispatch table. A kernel is built once per plan step from
// the same KernelSpec the CPU kernels get (static shapes, attributes from the lowering) and
// enqueues its work on the stream of the execution context it is given; it never
// synchronizes. One kernel object serves every execution context of its executor, from
// several threads at once (executor.hpp): run() is const, and whatever a run writes (scratch,
// library handles and their plans) lives in the Context, never in the kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel.hpp"
#include "gpu/common.hpp"

namespace graphkiln {
namespace gpu {

class Blas;

// What a kernel may use while it runs: one execution context's stream, its BLAS handles
// (cuBLAS / cuBLASLt / rocBLAS with their workspace and plans), its cuDNN / MIOpen handle and one
// scratch buffer shared by all steps of a run (they run one after another on the stream).
// Each context is used by one run at a time, so a kernel may use all of it freely.
struct Context {
  hipStream_t stream = nullptr;
  Blas* blas = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // The DNN library's handle bound to `stream` when a step's uses_dnn(): cudnnHandle_t on
  // NVIDIA builds, miopenHandle_t on AMD builds; else null
  void* dnn = nullptr;
  // Set by a control step's run() (control.hip: Branch, Jump, LoopTest, LoopNext): the step
  // the executor goes on at; -1, what every other step leaves, is the next one.
  int64_t next_step = -1;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs[i] is null for an absent optional input; all pointers are device pointers. const:
  // runs of several contexts call it at once, so it writes nothing of the kernel's own.
  virtual void run(const void* const* inputs, void* const* outputs, Context& ctx) const = 0;
  virtual size_t workspace_bytes() const { return 0; }
  // Whether run() needs ctx.dnn (the executor then gives each context a cuDNN / MIOpen
  // handle).
  virtual bool uses_dnn() const { return false; }
  // Why this step cannot be captured into a HIP/CUDA graph, or empty: control steps read a
  // value back on the host and pick the next step; host steps run a cpu kernel between two
  // copies. A plan holding one runs kernel by kernel (GpuExecutor::graph_state() says why).
  virtual std::string not_capturable() const { return {}; }
};

using Factory = std::unique_ptr<Kernel> (*)(const KernelSpec&);

std::unique_ptr<Kernel> make_kernel(const KernelSpec& spec);  // throws, naming the step
std::vector<std::string> kernel_names();

// Throws std::runtime_error("<what>: <runtime message>") when status is not hipSuccess.
void check(hipError_t status, const char* what);
// After a launch: the launch error, if any, as an exception naming the kernel.
void check_launch(const char* kernel);

inline unsigned blocks_for(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 2147483647 ? 2147483647 : b));
}

// Up to this many dims in index arithmetic on the device.
constexpr int kMaxRank = 8;

// An N-d index map: out linear index -> element offset in one operand.
struct Strides {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

__device__ inline int64_t map_offset(const Strides& s, int64_t index) {
  int64_t offset = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t dim = s.dims[d];
    offset += (index % dim) * s.strides[d];
    index /= dim;
  }
  return offset;
}

}  // namespace gpu
}  // namespace graphkiln
