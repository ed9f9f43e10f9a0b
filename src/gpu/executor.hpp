// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Runs a plan on the GPU: one device arena allocated from the memory plan, the constants
// uploaded once at build, one stream per executor. Per run: inputs host-to-device (or read
// where they already live on the device), the kernels, outputs device-to-host, one sync.
// With graph replay on (the default), the first run launches the kernels one by one, the
// second captures them into a HIP/CUDA graph and every later run replays that graph with one
// launch; device inputs are then copied into the executor's own input buffers (the graph's
// addresses are fixed). A plan whose kernels cannot be captured runs kernel by kernel, and
// graph_state() says why.
// Plain C++ (no GPU headers), so the pybind11 bindings compile with the host compiler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/executor.hpp"

namespace graphkiln {
namespace gpu {

struct HostBuffer {
  const void* data = nullptr;
  size_t nbytes = 0;
};

// One run-time input: host memory (copied in) or device memory (read in place).
struct InputBuffer {
  const void* data = nullptr;
  bool on_device = false;
};

class GpuExecutor {
 public:
  GpuExecutor(std::vector<StepSpec> steps, const std::vector<HostBuffer>& constants,
              int64_t arena_bytes, std::vector<size_t> input_bytes,
              std::vector<size_t> output_bytes, bool builtin_blas = false,
              bool use_graphs = true);
  ~GpuExecutor();
  GpuExecutor(const GpuExecutor&) = delete;
  GpuExecutor& operator=(const GpuExecutor&) = delete;

  // host_outputs[i] receives output i (output_bytes[i] bytes); returns after one sync.
  void run(const std::vector<InputBuffer>& inputs, const std::vector<void*>& host_outputs);

  // One run kernel by kernel with a device timer around each step: (step, milliseconds) in
  // plan order. Outputs are computed but not copied back. For finding slow steps.
  std::vector<std::pair<std::string, double>> profile(const std::vector<InputBuffer>& inputs);

  int64_t arena_bytes() const;
  size_t num_steps() const;
  size_t workspace_bytes() const;
  size_t device_bytes() const;  // everything this executor holds on the device
  std::string device_name() const;
  std::string blas_backend() const;
  // "off", "not captured yet", "replaying" or "kernel by kernel: <why capture failed>"
  std::string graph_state() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::vector<std::string> gpu_kernel_names();

}  // namespace gpu
}  // namespace graphkiln
