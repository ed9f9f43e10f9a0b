// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "gpu/common.hpp"
#include "gpu/executor.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "gpu/blas.hpp"
#include "gpu/kernel.hpp"

namespace graphkiln {
namespace gpu {

namespace {

constexpr size_t kAlign = 256;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::string current_device_name() {
  int device = 0;
  hipDeviceProp_t props;
  if (hipGetDevice(&device) != hipSuccess || hipGetDeviceProperties(&props, device) != hipSuccess)
    return "GPU ?";
  return "GPU " + std::to_string(device) + " '" + props.name + "'";
}

// One device allocation; out of memory names the device, the bytes asked and what for.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t nbytes, const std::string& what) : nbytes_(nbytes) {
    if (nbytes == 0) return;
    const hipError_t status = hipMalloc(&data_, nbytes);
    if (status != hipSuccess) {
      (void)hipGetLastError();
      size_t free_bytes = 0, total = 0;
      (void)hipMemGetInfo(&free_bytes, &total);
      throw std::runtime_error(current_device_name() + ": out of memory allocating " +
                               std::to_string(nbytes) + " bytes for " + what + " (" +
                               std::to_string(free_bytes) + " of " + std::to_string(total) +
                               " bytes free): " + hipGetErrorString(status));
    }
  }
  ~DeviceBuffer() {
    if (data_) (void)hipFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), nbytes_(o.nbytes_) { o.data_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(nbytes_, o.nbytes_);
    return *this;
  }
  unsigned char* get() const { return static_cast<unsigned char*>(data_); }
  size_t size() const { return nbytes_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
};

}  // namespace

struct GpuExecutor::Impl {
  struct Step {
    std::string name;
    std::unique_ptr<Kernel> kernel;
    std::vector<TensorRef> inputs, outputs;
    std::vector<bool> present;
    std::vector<const void*> in_ptrs;
    std::vector<void*> out_ptrs;
  };
  std::string device;
  hipStream_t stream = nullptr;
  std::unique_ptr<Blas> blas;
  DeviceBuffer arena, constants, workspace;
  std::vector<size_t> constant_offsets;
  std::vector<DeviceBuffer> inputs, outputs;
  std::vector<size_t> input_bytes, output_bytes;
  std::vector<Step> steps;
  int64_t arena_bytes = 0;
  bool use_graphs = true;
  int64_t runs = 0;
  hipGraph_t graph = nullptr;
  hipGraphExec_t graph_exec = nullptr;
  std::string graph_failure;  // why capture failed; the plan then runs kernel by kernel

  ~Impl() {
    if (graph_exec) (void)hipGraphExecDestroy(graph_exec);
    if (graph) (void)hipGraphDestroy(graph);
    if (stream) (void)hipStreamDestroy(stream);
  }

  std::vector<const void*> stage_inputs(const std::vector<InputBuffer>& inputs, bool copy_all);
  void enqueue_steps(const std::vector<const void*>& device_inputs);
  bool capture(const std::vector<const void*>& device_inputs);

  unsigned char* resolve(const TensorRef& r, const std::vector<const void*>& run_inputs) {
    switch (r.storage) {
      case Storage::arena: return arena.get() + r.offset;
      case Storage::constant: return constants.get() + constant_offsets[r.index] + r.offset;
      case Storage::input:
        return const_cast<unsigned char*>(static_cast<const unsigned char*>(run_inputs[r.index])) +
               r.offset;
      case Storage::output: return outputs[r.index].get() + r.offset;
    }
    return nullptr;
  }
};

// Host inputs are copied into our buffers; device inputs too when copy_all (graph replay
// needs fixed addresses), else they are read in place. Returns each input's device address.
std::vector<const void*> GpuExecutor::Impl::stage_inputs(const std::vector<InputBuffer>& in,
                                                         bool copy_all) {
  if (in.size() != input_bytes.size())
    throw std::invalid_argument("GpuExecutor: wrong number of inputs");
  std::vector<const void*> device_inputs(in.size());
  bool any_on_device = false;
  for (const InputBuffer& b : in) any_on_device |= b.on_device;
  // a device input may still be being written on its producer's stream
  if (any_on_device) check(hipDeviceSynchronize(), "waiting for the device inputs");
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].on_device && !copy_all) {
      device_inputs[i] = in[i].data;
      continue;
    }
    if (input_bytes[i])
      check(hipMemcpyAsync(inputs[i].get(), in[i].data, input_bytes[i],
                           in[i].on_device ? hipMemcpyDeviceToDevice : hipMemcpyHostToDevice,
                           stream),
            "copying an input to the device");
    device_inputs[i] = inputs[i].get();
  }
  return device_inputs;
}

void GpuExecutor::Impl::enqueue_steps(const std::vector<const void*>& device_inputs) {
  Context ctx{stream, blas.get(), workspace.get(), workspace.size()};
  for (Step& step : steps) {
    for (size_t i = 0; i < step.inputs.size(); ++i)
      step.in_ptrs[i] = step.present[i] ? resolve(step.inputs[i], device_inputs) : nullptr;
    for (size_t i = 0; i < step.outputs.size(); ++i)
      step.out_ptrs[i] = resolve(step.outputs[i], device_inputs);
    try {
      step.kernel->run(step.in_ptrs.data(), step.out_ptrs.data(), ctx);
    } catch (const std::exception& e) {
      throw std::runtime_error(device + ": step " + step.name + " failed: " + e.what());
    }
  }
}

// Records the steps into a graph; on failure leaves graph_failure set and the stream usable.
bool GpuExecutor::Impl::capture(const std::vector<const void*>& device_inputs) {
  hipError_t status = hipStreamBeginCapture(stream, hipStreamCaptureModeRelaxed);
  if (status != hipSuccess) {
    graph_failure = std::string("beginning the capture: ") + hipGetErrorString(status);
    (void)hipGetLastError();
    return false;
  }
  std::string failure;
  try {
    enqueue_steps(device_inputs);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  hipGraph_t captured = nullptr;
  status = hipStreamEndCapture(stream, &captured);
  if (failure.empty() && status != hipSuccess)
    failure = std::string("ending the capture: ") + hipGetErrorString(status);
  if (failure.empty()) {
    status = hipGraphInstantiate(&graph_exec, captured, nullptr, nullptr, 0);
    if (status != hipSuccess) {
      failure = std::string("instantiating the graph: ") + hipGetErrorString(status);
      graph_exec = nullptr;
    }
  }
  if (!failure.empty()) {
    if (captured) (void)hipGraphDestroy(captured);
    (void)hipGetLastError();
    graph_failure = failure;
    return false;
  }
  graph = captured;
  return true;
}

GpuExecutor::GpuExecutor(std::vector<StepSpec> steps, const std::vector<HostBuffer>& constants,
                         int64_t arena_bytes, std::vector<size_t> input_bytes,
                         std::vector<size_t> output_bytes, bool builtin_blas, bool use_graphs)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.use_graphs = use_graphs;
  m.device = current_device_name();
  if (arena_bytes < 0) throw std::invalid_argument("negative arena size");
  m.arena_bytes = arena_bytes;
  check(hipStreamCreateWithFlags(&m.stream, hipStreamNonBlocking), "hipStreamCreate");
  m.blas = std::make_unique<Blas>(m.stream, builtin_blas);

  size_t total = 0;
  for (const HostBuffer& c : constants) {
    m.constant_offsets.push_back(total);
    total += round_up(c.nbytes);
  }
  m.constants = DeviceBuffer(total, "the plan's constants");
  for (size_t i = 0; i < constants.size(); ++i)
    if (constants[i].nbytes)
      check(hipMemcpyAsync(m.constants.get() + m.constant_offsets[i], constants[i].data,
                           constants[i].nbytes, hipMemcpyHostToDevice, m.stream),
            "uploading the constants");
  m.arena = DeviceBuffer(static_cast<size_t>(arena_bytes), "the activation arena");
  m.input_bytes = std::move(input_bytes);
  m.output_bytes = std::move(output_bytes);
  for (size_t i = 0; i < m.input_bytes.size(); ++i)
    m.inputs.emplace_back(m.input_bytes[i], "input " + std::to_string(i));
  for (size_t i = 0; i < m.output_bytes.size(); ++i)
    m.outputs.emplace_back(m.output_bytes[i], "output " + std::to_string(i));

  size_t workspace = 0;
  for (StepSpec& s : steps) {
    if (s.inputs.size() != s.spec.inputs.size() || s.outputs.size() != s.spec.outputs.size())
      throw std::invalid_argument("step '" + s.spec.name + "': tensor references and "
                                  "descriptions differ in number");
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const TensorRef& r = s.inputs[i];
      if (!s.spec.has_input(i) || r.storage != Storage::constant) continue;
      if (r.index < 0 || r.index >= static_cast<int64_t>(constants.size()))
        throw std::invalid_argument("step '" + s.spec.name + "': bad constant index");
      s.spec.inputs[i].constant = static_cast<const unsigned char*>(constants[r.index].data) +
                                  r.offset;
    }
    for (const TensorRef& r : s.outputs)
      if (r.storage == Storage::constant || r.storage == Storage::input)
        throw std::invalid_argument("step '" + s.spec.name + "' writes a constant or an input");
    Impl::Step step;
    step.name = s.spec.kernel + " '" + s.spec.name + "'";
    step.kernel = gpu::make_kernel(s.spec);
    workspace = std::max(workspace, step.kernel->workspace_bytes());
    step.inputs = std::move(s.inputs);
    step.outputs = std::move(s.outputs);
    step.present = s.spec.present;
    step.present.resize(step.inputs.size(), true);
    step.in_ptrs.resize(step.inputs.size());
    step.out_ptrs.resize(step.outputs.size());
    m.steps.push_back(std::move(step));
  }
  m.workspace = DeviceBuffer(workspace, "kernel scratch space");
  check(hipStreamSynchronize(m.stream), "uploading the constants");
}

GpuExecutor::~GpuExecutor() = default;

void GpuExecutor::run(const std::vector<InputBuffer>& inputs,
                      const std::vector<void*>& host_outputs) {
  Impl& m = *impl_;
  if (host_outputs.size() != m.output_bytes.size())  // stage_inputs checks the inputs
    throw std::invalid_argument("GpuExecutor.run: wrong number of outputs");
  // A graph replays fixed addresses: device inputs are then copied into our own buffers.
  const bool graphs = m.use_graphs && m.graph_failure.empty();
  const std::vector<const void*> device_inputs = m.stage_inputs(inputs, graphs);
  // The first run goes kernel by kernel (libraries finish their lazy set-up); the second
  // captures a graph, and that run and every later one replay it.
  if (graphs && !m.graph_exec && m.runs > 0) (void)m.capture(device_inputs);
  if (m.graph_exec)
    check(hipGraphLaunch(m.graph_exec, m.stream), "launching the plan's graph");
  else
    m.enqueue_steps(device_inputs);
  ++m.runs;
  for (size_t i = 0; i < host_outputs.size(); ++i)
    if (m.output_bytes[i])
      check(hipMemcpyAsync(host_outputs[i], m.outputs[i].get(), m.output_bytes[i],
                           hipMemcpyDeviceToHost, m.stream),
            "copying an output to the host");
  const hipError_t status = hipStreamSynchronize(m.stream);
  if (status != hipSuccess)
    throw std::runtime_error(m.device + ": running the plan failed: " +
                             hipGetErrorString(status));
}

std::vector<std::pair<std::string, double>> GpuExecutor::profile(
    const std::vector<InputBuffer>& inputs) {
  Impl& m = *impl_;
  const std::vector<const void*> device_inputs = m.stage_inputs(inputs, false);
  std::vector<hipEvent_t> events(m.steps.size() + 1, nullptr);
  std::vector<std::pair<std::string, double>> times;
  std::string failure;
  try {
    for (hipEvent_t& e : events) check(hipEventCreate(&e), "creating a timing event");
    Context ctx{m.stream, m.blas.get(), m.workspace.get(), m.workspace.size()};
    check(hipEventRecord(events[0], m.stream), "recording a timing event");
    for (size_t s = 0; s < m.steps.size(); ++s) {
      Impl::Step& step = m.steps[s];
      for (size_t i = 0; i < step.inputs.size(); ++i)
        step.in_ptrs[i] = step.present[i] ? m.resolve(step.inputs[i], device_inputs) : nullptr;
      for (size_t i = 0; i < step.outputs.size(); ++i)
        step.out_ptrs[i] = m.resolve(step.outputs[i], device_inputs);
      step.kernel->run(step.in_ptrs.data(), step.out_ptrs.data(), ctx);
      check(hipEventRecord(events[s + 1], m.stream), "recording a timing event");
    }
    check(hipEventSynchronize(events.back()), "profiling the plan");
    for (size_t s = 0; s < m.steps.size(); ++s) {
      float ms = 0.f;
      check(hipEventElapsedTime(&ms, events[s], events[s + 1]), "reading a timing event");
      times.emplace_back(m.steps[s].name, ms);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  for (hipEvent_t e : events)
    if (e) (void)hipEventDestroy(e);
  if (!failure.empty()) throw std::runtime_error(m.device + ": profiling failed: " + failure);
  return times;
}

int64_t GpuExecutor::arena_bytes() const { return impl_->arena_bytes; }
size_t GpuExecutor::num_steps() const { return impl_->steps.size(); }
size_t GpuExecutor::workspace_bytes() const { return impl_->workspace.size(); }
size_t GpuExecutor::device_bytes() const {
  size_t n = impl_->arena.size() + impl_->constants.size() + impl_->workspace.size();
  for (const auto& b : impl_->inputs) n += b.size();
  for (const auto& b : impl_->outputs) n += b.size();
  return n;
}
std::string GpuExecutor::device_name() const { return impl_->device; }
std::string GpuExecutor::blas_backend() const { return impl_->blas->backend(); }
std::string GpuExecutor::graph_state() const {
  if (!impl_->use_graphs) return "off";
  if (!impl_->graph_failure.empty()) return "kernel by kernel: " + impl_->graph_failure;
  return impl_->graph_exec ? "replaying" : "not captured yet";
}

std::vector<std::string> gpu_kernel_names() { return kernel_names(); }

}  // namespace gpu
}  // namespace graphkiln
