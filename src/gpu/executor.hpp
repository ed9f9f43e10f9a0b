// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Runs a plan on the GPU, from several threads at once.
//
// Shared by all runs, and never written after the constructor returns: the plan (steps and
// their tensor references), the constants (uploaded once), the kernel objects (run() is
// const; the tables and programs some upload at build are only read) and the device.
// Per execution context, used by one run at a time: the activation arena, the kernel scratch
// workspace, the input and output staging buffers, a non-blocking stream, the HIP/CUDA graph
// captured on it and its state, a Blas bound to that stream (the cuBLAS / rocBLAS handle, its
// workspace, cuBLASLt's handle and plan cache), a cuDNN handle bound to it (NVIDIA, plans with
// cuDNN Conv steps) and an event that orders the run after its device inputs' producers.
//
// The pool: a run takes an idle context and gives it back when it returns (also when it
// throws). Where none is idle, the run makes one more while there are fewer than
// max_contexts, else waits for one. The constructor makes the first (build errors, running
// out of memory included, surface at compile time); later ones are made on demand, so device
// memory grows by one context's buffers per context, never per run. Should making one fail
// (out of memory), the pool stays at the contexts it has (max_contexts() then says how
// many) and the run waits for one of them.
//
// A run on a context: inputs host-to-device (or read where they already live on the device),
// the kernels, outputs device-to-host, one sync of the context's own stream. With graph replay
// on (the default), a context's first run launches the kernels one by one (libraries finish
// their lazy set-up), its second captures them into a graph, and its later runs replay that
// graph with one launch; device inputs are then copied into the context's own input buffers
// (a graph's addresses are fixed). A context whose capture fails runs kernel by kernel, with
// the same results, and graph_state() says why.
//
// Device inputs: the context's stream waits, through an event (no host sync), for the stream
// their producer wrote them on: the one __cuda_array_interface__ v3 names, else the legacy
// default stream, where producers that name no stream write (and where a DLPack producer
// orders its work when asked for stream=legacy, as the bindings ask). A run never waits for
// another context's stream.
//
// Captures: CUDA invalidates every capture on a device when some thread synchronizes the
// device or copies synchronously meanwhile, and may fail that call too (HIP alike). So all of
// graphkiln's GPU work here (building an executor, making a context, a run, profiling,
// destroying) holds one process-wide gate shared, and a context's capturing run holds it
// alone; a capture waiting keeps new holders out, so it waits only for the runs in flight
// (and happens once per context). GPU calls made outside graphkiln can still break a
// capture: that context then runs kernel by kernel.
//
// Plain C++ (no GPU headers), so the pybind11 bindings compile with the host compiler.
#pragma once

#include <cstddef>
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
  // For a device input, the stream its producer wrote it on, in __cuda_array_interface__ v3's
  // encoding: 1 the legacy default stream, 2 the per-thread default stream, another value a
  // hipStream_t / cudaStream_t; 0 (not given) means the legacy default stream.
  uintptr_t stream = 0;
};

// The value that names the legacy default stream in DLPack's __dlpack__(stream=...): 1 on
// CUDA, 0 on ROCm.
int dlpack_legacy_stream();
// DLPack's device type of this build's GPUs: 2 (kDLCUDA) on NVIDIA, 10 (kDLROCM) on AMD.
int dlpack_device_type();

class GpuExecutor {
 public:
  // max_contexts: how many runs may execute at once (at least 1). device: the GPU every
  // allocation, stream, handle and graph of the executor belongs to, -1 the calling thread's
  // current one; one that does not exist is a std::invalid_argument saying which do.
  GpuExecutor(std::vector<StepSpec> steps, const std::vector<HostBuffer>& constants,
              int64_t arena_bytes, std::vector<size_t> input_bytes,
              std::vector<size_t> output_bytes, bool builtin_blas = false, bool use_graphs = true,
              size_t max_contexts = 1, int device = -1);
  // No run may be in flight (the bindings hold the executor for the length of a run).
  ~GpuExecutor();
  GpuExecutor(const GpuExecutor&) = delete;
  GpuExecutor& operator=(const GpuExecutor&) = delete;

  // outputs[i] receives output i (output_bytes[i] bytes): host memory, or device memory of
  // this executor's GPU when outputs_on_device (a device-to-device copy); returns after one
  // sync of the context's stream. Safe to call from several threads at once.
  void run(const std::vector<InputBuffer>& inputs, const std::vector<void*>& outputs,
           bool outputs_on_device = false);

  // One run kernel by kernel with a device timer around each step: (step, milliseconds) in
  // plan order. Outputs are computed but not copied back. For finding slow steps. Takes a
  // context like run().
  std::vector<std::pair<std::string, double>> profile(const std::vector<InputBuffer>& inputs);

  int64_t arena_bytes() const;
  size_t num_steps() const;
  size_t workspace_bytes() const;  // the kernel scratch buffer of one context
  // everything this executor holds on the device: the constants once plus every context
  size_t device_bytes() const;
  size_t bytes_per_context() const;  // device bytes of one execution context (all are alike)
  size_t contexts_created() const;   // execution contexts made so far
  size_t max_contexts() const;       // the pool's bound (lower than asked after a failed growth)
  std::string device_name() const;
  int device_id() const;  // the GPU it runs on
  std::string blas_backend() const;
  // "off", "not captured yet", "replaying", "replaying in <k> of <n> contexts", or
  // "kernel by kernel: <why capture failed>" (with how many contexts replay, if any do)
  std::string graph_state() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::vector<std::string> gpu_kernel_names();

// Device memory for outputs left on the GPU (the bindings' DeviceArray): allocated and freed
// with `device` current, and copied to the host (synchronously) from it.
void* device_alloc(size_t bytes, int device);
void device_free(void* data, int device) noexcept;
void device_to_host(void* dst, const void* src, size_t bytes, int device);

// Bytes every executor of the process copied between host and device for run inputs and
// outputs so far (device inputs and outputs count nothing): {host to device, device to host}.
std::pair<uint64_t, uint64_t> run_transfer_bytes();

}  // namespace gpu
}  // namespace graphkiln
