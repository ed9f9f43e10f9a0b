// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What is shared and what is per execution context: executor.hpp.
#include "gpu/common.hpp"
#include "gpu/executor.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "gpu/blas.hpp"
#include "gpu/cudnn.hpp"
#include "gpu/miopen.hpp"
#include "gpu/device_gate.hpp"
#include "gpu/kernel.hpp"

namespace graphkiln {
namespace gpu {

namespace {

constexpr size_t kAlign = 256;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::string name_of_device(int device) {
  hipDeviceProp_t props;
  if (hipGetDeviceProperties(&props, device) != hipSuccess) return "GPU ?";
  return "GPU " + std::to_string(device) + " '" + props.name + "'";
}

std::string current_device_name() {
  int device = 0;
  if (hipGetDevice(&device) != hipSuccess) return "GPU ?";
  return name_of_device(device);
}

// `device` is one of this machine's GPUs, else std::invalid_argument naming those there are.
void check_device_exists(int device) {
  int count = 0;
  if (hipGetDeviceCount(&count) != hipSuccess) count = 0;
  if (device < count) return;
  std::string have =
      count == 0   ? "no GPU"
      : count == 1 ? "one GPU, device 0"
                   : std::to_string(count) + " GPUs, devices 0 to " + std::to_string(count - 1);
  throw std::invalid_argument("GPU device " + std::to_string(device) +
                              " does not exist: this machine has " + have);
}

// Makes `device` current on the calling thread for a scope and puts the thread's own back
// after: a thread starts on device 0, and an executor's memory and streams belong to the
// device it was built on.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (hipGetDevice(&previous_) == hipSuccess && previous_ != device) {
      check(hipSetDevice(device), "making the executor's GPU current");
      switched_ = true;
    }
  }
  ~DeviceScope() {
    if (switched_) (void)hipSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// run_transfer_bytes(): what runs copied in and out through the host
std::atomic<uint64_t> host_to_device_bytes{0}, device_to_host_bytes{0};

// The stream an InputBuffer's `stream` names (executor.hpp).
hipStream_t producer_stream(uintptr_t stream) {
#if defined(__CUDACC__) && !defined(__HIP__)
  const hipStream_t legacy = cudaStreamLegacy;
#else
  const hipStream_t legacy = nullptr;  // HIP's null stream
#endif
  if (stream == 0 || stream == 1) return legacy;
  if (stream == 2) return hipStreamPerThread;
  return reinterpret_cast<hipStream_t>(stream);
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
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), nbytes_(o.nbytes_) {
    o.data_ = nullptr;
    o.nbytes_ = 0;
  }
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

// Everything one run writes (executor.hpp). Used by one run at a time: the pool hands it out.
struct RunContext {
  hipStream_t stream = nullptr;
  hipEvent_t inputs_ready = nullptr;  // recorded on a producer's stream, waited for on ours
  std::unique_ptr<Blas> blas;
  void* dnn = nullptr;  // cuDNN / MIOpen handle bound to `stream` (plans with such steps)
  DeviceBuffer arena, workspace;
  std::vector<DeviceBuffer> inputs, outputs;
  int64_t runs = 0;
  hipGraph_t graph = nullptr;
  hipGraphExec_t graph_exec = nullptr;
  std::string graph_failure;  // why capture failed; this context then runs kernel by kernel

  RunContext() = default;
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;
  ~RunContext() {
    // a run that threw may have left work queued that still reads our buffers
    if (stream) (void)hipStreamSynchronize(stream);
    if (graph_exec) (void)hipGraphExecDestroy(graph_exec);
    if (graph) (void)hipGraphDestroy(graph);
#if defined(GRAPHKILN_GPU_CUDNN)
    cudnn::destroy_handle(dnn);
#elif defined(GRAPHKILN_GPU_MIOPEN)
    miopen::destroy_handle(dnn);
#endif
    blas.reset();  // before the stream it is bound to
    if (inputs_ready) (void)hipEventDestroy(inputs_ready);
    if (stream) (void)hipStreamDestroy(stream);
  }

  size_t device_bytes() const {
    size_t n = arena.size() + workspace.size() + (blas ? blas->workspace_bytes() : 0);
    for (const DeviceBuffer& b : inputs) n += b.size();
    for (const DeviceBuffer& b : outputs) n += b.size();
    return n;
  }

  Context kernel_context() {
    return Context{stream, blas.get(), workspace.get(), workspace.size(), dnn};
  }
};

}  // namespace

int dlpack_device_type() {
#if defined(__CUDACC__) && !defined(__HIP__)
  return 2;
#else
  return 10;
#endif
}

int dlpack_legacy_stream() {
#if defined(__CUDACC__) && !defined(__HIP__)
  return 1;
#else
  return 0;
#endif
}

struct GpuExecutor::Impl {
  struct Step {
    std::string name;
    std::unique_ptr<const Kernel> kernel;
    std::vector<TensorRef> inputs, outputs;
    std::vector<bool> present;
  };

  // ---- shared by all runs; written only by the constructor ------------------------------
  int device_id = 0;
  std::string device;
  DeviceBuffer constants;
  std::vector<size_t> constant_offsets;
  std::vector<size_t> input_bytes, output_bytes;
  std::vector<Step> steps;
  int64_t arena_bytes = 0;
  size_t workspace_bytes = 0;
  bool builtin_blas = false, use_graphs = true, uses_dnn = false;
  // why the plan is never captured (its first control or host step's reason), or empty
  std::string not_capturable;

  // ---- the pool of contexts, and what graph_state() reports: guarded by pool_mutex -------
  mutable std::mutex pool_mutex;
  std::condition_variable context_idle;
  std::vector<std::unique_ptr<RunContext>> contexts;  // every context made; none removed
  std::vector<RunContext*> idle;
  size_t max_contexts = 1;
  size_t making = 0;            // contexts being made now, outside the lock
  size_t replaying = 0;         // contexts whose capture succeeded
  size_t capture_failures = 0;  // contexts whose capture failed
  std::string first_capture_failure;

  std::unique_ptr<RunContext> make_context() const;  // the caller holds the gate
  RunContext* acquire();
  void release(RunContext* c);
  void note_capture(const RunContext& c);

  unsigned char* resolve(RunContext& c, const TensorRef& r,
                         const std::vector<const void*>& run_inputs) const {
    switch (r.storage) {
      case Storage::arena: return c.arena.get() + r.offset;
      case Storage::constant: return constants.get() + constant_offsets[r.index] + r.offset;
      case Storage::input:
        return const_cast<unsigned char*>(static_cast<const unsigned char*>(run_inputs[r.index])) +
               r.offset;
      case Storage::output: return c.outputs[r.index].get() + r.offset;
    }
    return nullptr;
  }

  std::vector<const void*> stage_inputs(RunContext& c, const std::vector<InputBuffer>& inputs,
                                        bool copy_all) const;
  // step `s` on c's stream (pointers resolved into the caller's scratch vectors); returns
  // the step to go on at (a control step's choice), -1 for the next one
  int64_t enqueue_step(RunContext& c, size_t s, const std::vector<const void*>& device_inputs,
                       std::vector<const void*>& in, std::vector<void*>& out) const;
  void enqueue_steps(RunContext& c, const std::vector<const void*>& device_inputs) const;
  bool capture(RunContext& c, const std::vector<const void*>& device_inputs) const;

  // Holds one context of the pool for a scope (given back when the run returns or throws).
  class Lease {
   public:
    explicit Lease(Impl& m) : m_(m), c_(m.acquire()) {}
    ~Lease() { m_.release(c_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    RunContext& context() const { return *c_; }

   private:
    Impl& m_;
    RunContext* c_;
  };
};

std::unique_ptr<RunContext> GpuExecutor::Impl::make_context() const {
  auto c = std::make_unique<RunContext>();
  check(hipStreamCreateWithFlags(&c->stream, hipStreamNonBlocking), "hipStreamCreate");
  check(hipEventCreateWithFlags(&c->inputs_ready, hipEventDisableTiming), "hipEventCreate");
  c->blas = std::make_unique<Blas>(c->stream, builtin_blas);
#if defined(GRAPHKILN_GPU_CUDNN)
  if (uses_dnn) c->dnn = cudnn::create_handle(c->stream);
#elif defined(GRAPHKILN_GPU_MIOPEN)
  if (uses_dnn) c->dnn = miopen::create_handle(c->stream);
#endif
  c->arena = DeviceBuffer(static_cast<size_t>(arena_bytes), "the activation arena");
  c->workspace = DeviceBuffer(workspace_bytes, "kernel scratch space");
  for (size_t i = 0; i < input_bytes.size(); ++i)
    c->inputs.emplace_back(input_bytes[i], "input " + std::to_string(i));
  for (size_t i = 0; i < output_bytes.size(); ++i)
    c->outputs.emplace_back(output_bytes[i], "output " + std::to_string(i));
  return c;
}

// An idle context, else a new one while there are fewer than max_contexts, else waits for one
// to be given back. The newest idle one is taken first, so a pool grows only when runs really
// overlap and warm (captured) contexts are reused.
RunContext* GpuExecutor::Impl::acquire() {
  std::unique_lock<std::mutex> lock(pool_mutex);
  for (;;) {
    if (!idle.empty()) {
      RunContext* c = idle.back();
      idle.pop_back();
      return c;
    }
    if (contexts.size() + making < max_contexts) {
      ++making;
      lock.unlock();
      std::unique_ptr<RunContext> made;
      try {
        GateHold gate(false);
        made = make_context();
      } catch (const std::exception&) {
        made.reset();  // handled below
      }
      lock.lock();
      --making;
      if (made) {
        contexts.push_back(std::move(made));
        return contexts.back().get();
      }
      // No room for one more (out of memory, most likely): make do with the contexts there
      // are (at least the constructor's) and wait for one of them.
      max_contexts = std::max<size_t>(1, contexts.size() + making);
      continue;
    }
    context_idle.wait(lock);
  }
}

void GpuExecutor::Impl::release(RunContext* c) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    idle.push_back(c);
  }
  context_idle.notify_one();
}

void GpuExecutor::Impl::note_capture(const RunContext& c) {
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (c.graph_exec) {
    ++replaying;
  } else {
    if (capture_failures++ == 0) first_capture_failure = c.graph_failure;
  }
}

// Orders c's stream after the producers of the device inputs, then copies host inputs into
// c's buffers, and device inputs too when copy_all (graph replay needs fixed addresses), else
// reads them in place. Returns each input's device address.
std::vector<const void*> GpuExecutor::Impl::stage_inputs(RunContext& c,
                                                         const std::vector<InputBuffer>& in,
                                                         bool copy_all) const {
  std::vector<hipStream_t> producers;
  for (const InputBuffer& b : in) {
    if (!b.on_device) continue;
    const hipStream_t s = producer_stream(b.stream);
    if (std::find(producers.begin(), producers.end(), s) == producers.end()) producers.push_back(s);
  }
  for (hipStream_t s : producers) {  // a wait on the device: no other stream is waited for
    check(hipEventRecord(c.inputs_ready, s), "marking where a device input is ready");
    check(hipStreamWaitEvent(c.stream, c.inputs_ready, 0), "waiting for a device input");
  }
  std::vector<const void*> device_inputs(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].on_device && !copy_all) {
      device_inputs[i] = in[i].data;
      continue;
    }
    if (input_bytes[i])
      check(hipMemcpyAsync(c.inputs[i].get(), in[i].data, input_bytes[i],
                           in[i].on_device ? hipMemcpyDeviceToDevice : hipMemcpyHostToDevice,
                           c.stream),
            "copying an input to the device");
    if (!in[i].on_device) host_to_device_bytes += input_bytes[i];
    device_inputs[i] = c.inputs[i].get();
  }
  return device_inputs;
}

int64_t GpuExecutor::Impl::enqueue_step(RunContext& c, size_t s,
                                        const std::vector<const void*>& device_inputs,
                                        std::vector<const void*>& in,
                                        std::vector<void*>& out) const {
  const Step& step = steps[s];
  in.resize(step.inputs.size());
  out.resize(step.outputs.size());
  for (size_t i = 0; i < step.inputs.size(); ++i)
    in[i] = step.present[i] ? resolve(c, step.inputs[i], device_inputs) : nullptr;
  for (size_t i = 0; i < step.outputs.size(); ++i)
    out[i] = resolve(c, step.outputs[i], device_inputs);
  Context ctx = c.kernel_context();
  try {
    step.kernel->run(in.data(), out.data(), ctx);
  } catch (const std::exception& e) {
    throw std::runtime_error(device + ": step " + step.name + " failed: " + e.what());
  }
  return ctx.next_step;
}

namespace {
// The step after `s`, given what enqueue_step returned for it.
size_t following(size_t s, int64_t next) { return next < 0 ? s + 1 : static_cast<size_t>(next); }
}  // namespace

void GpuExecutor::Impl::enqueue_steps(RunContext& c,
                                      const std::vector<const void*>& device_inputs) const {
  std::vector<const void*> in;
  std::vector<void*> out;
  for (size_t s = 0; s < steps.size();)
    s = following(s, enqueue_step(c, s, device_inputs, in, out));
}

// Records the steps into c's graph; on failure leaves c.graph_failure set and the stream
// usable. The caller holds the gate alone.
bool GpuExecutor::Impl::capture(RunContext& c,
                                const std::vector<const void*>& device_inputs) const {
  hipError_t status = hipStreamBeginCapture(c.stream, hipStreamCaptureModeRelaxed);
  if (status != hipSuccess) {
    c.graph_failure = std::string("beginning the capture: ") + hipGetErrorString(status);
    (void)hipGetLastError();
    return false;
  }
  std::string failure;
  try {
    enqueue_steps(c, device_inputs);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  hipGraph_t captured = nullptr;
  status = hipStreamEndCapture(c.stream, &captured);
  if (failure.empty() && status != hipSuccess)
    failure = std::string("ending the capture: ") + hipGetErrorString(status);
  if (failure.empty()) {
    status = hipGraphInstantiate(&c.graph_exec, captured, nullptr, nullptr, 0);
    if (status != hipSuccess) {
      failure = std::string("instantiating the graph: ") + hipGetErrorString(status);
      c.graph_exec = nullptr;
    }
  }
  if (!failure.empty()) {
    if (captured) (void)hipGraphDestroy(captured);
    (void)hipGetLastError();
    c.graph_failure = failure;
    return false;
  }
  c.graph = captured;
  return true;
}

GpuExecutor::GpuExecutor(std::vector<StepSpec> steps, const std::vector<HostBuffer>& constants,
                         int64_t arena_bytes, std::vector<size_t> input_bytes,
                         std::vector<size_t> output_bytes, bool builtin_blas, bool use_graphs,
                         size_t max_contexts, int device) {
  if (arena_bytes < 0) throw std::invalid_argument("negative arena size");
  if (max_contexts < 1) throw std::invalid_argument("max_contexts must be at least 1");
  if (device >= 0) check_device_exists(device);
  int current = 0;
  check(hipGetDevice(&current), "hipGetDevice");
  DeviceScope on_device(device >= 0 ? device : current);
  GateHold gate(false);
  // built in a local, so that a throw frees what was made while the gate is still held
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;
  check(hipGetDevice(&m.device_id), "hipGetDevice");
  m.device = name_of_device(m.device_id);
  m.use_graphs = use_graphs;
  m.builtin_blas = builtin_blas;
  m.arena_bytes = arena_bytes;
  m.max_contexts = max_contexts;
  m.input_bytes = std::move(input_bytes);
  m.output_bytes = std::move(output_bytes);

  for (StepSpec& s : steps) {
    if (s.inputs.size() != s.spec.inputs.size() || s.outputs.size() != s.spec.outputs.size())
      throw std::invalid_argument("step '" + s.spec.name +
                                  "': tensor references and "
                                  "descriptions differ in number");
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const TensorRef& r = s.inputs[i];
      if (!s.spec.has_input(i) || r.storage != Storage::constant) continue;
      if (r.index < 0 || r.index >= static_cast<int64_t>(constants.size()))
        throw std::invalid_argument("step '" + s.spec.name + "': bad constant index");
      s.spec.inputs[i].constant =
          static_cast<const unsigned char*>(constants[r.index].data) + r.offset;
    }
    for (const TensorRef& r : s.outputs)
      if (r.storage == Storage::constant || r.storage == Storage::input)
        throw std::invalid_argument("step '" + s.spec.name + "' writes a constant or an input");
    Impl::Step step;
    step.name = s.spec.kernel + " '" + s.spec.name + "'";
    step.kernel = gpu::make_kernel(s.spec);
    m.workspace_bytes = std::max(m.workspace_bytes, step.kernel->workspace_bytes());
    m.uses_dnn = m.uses_dnn || step.kernel->uses_dnn();
    if (m.not_capturable.empty()) m.not_capturable = step.kernel->not_capturable();
    step.inputs = std::move(s.inputs);
    step.outputs = std::move(s.outputs);
    step.present = s.spec.present;
    step.present.resize(step.inputs.size(), true);
    m.steps.push_back(std::move(step));
  }

  size_t total = 0;
  for (const HostBuffer& c : constants) {
    m.constant_offsets.push_back(total);
    total += round_up(c.nbytes);
  }
  m.constants = DeviceBuffer(total, "the plan's constants");
  // the first context now: its buffers are the ones a compile must be able to allocate
  m.contexts.push_back(m.make_context());
  m.idle.push_back(m.contexts.back().get());
  const hipStream_t upload = m.contexts.back()->stream;
  for (size_t i = 0; i < constants.size(); ++i)
    if (constants[i].nbytes)
      check(hipMemcpyAsync(m.constants.get() + m.constant_offsets[i], constants[i].data,
                           constants[i].nbytes, hipMemcpyHostToDevice, upload),
            "uploading the constants");
  // every later context's stream reads the constants: they are complete before we return
  check(hipStreamSynchronize(upload), "uploading the constants");
  impl_ = std::move(impl);
}

GpuExecutor::~GpuExecutor() {
  if (!impl_) return;
  DeviceScope on_device(impl_->device_id);
  GateHold gate(false);
  impl_.reset();
}

void GpuExecutor::run(const std::vector<InputBuffer>& inputs,
                      const std::vector<void*>& host_outputs, bool outputs_on_device) {
  Impl& m = *impl_;
  if (inputs.size() != m.input_bytes.size())
    throw std::invalid_argument("GpuExecutor: wrong number of inputs");
  if (host_outputs.size() != m.output_bytes.size())
    throw std::invalid_argument("GpuExecutor.run: wrong number of outputs");
  DeviceScope on_device(m.device_id);
  Impl::Lease lease(m);
  RunContext& c = lease.context();
  // A graph replays fixed addresses: device inputs are then copied into c's own buffers.
  const bool graphs = m.use_graphs && m.not_capturable.empty() && c.graph_failure.empty();
  // A context's first run goes kernel by kernel (libraries finish their lazy set-up); its
  // second captures a graph, and that run and every later one replay it. The capturing run
  // holds the gate alone.
  const bool capturing = graphs && !c.graph_exec && c.runs > 0;
  GateHold gate(capturing);
  try {
    const std::vector<const void*> device_inputs = m.stage_inputs(c, inputs, graphs);
    if (capturing) {
      (void)m.capture(c, device_inputs);
      m.note_capture(c);
    }
    if (c.graph_exec) check(hipGraphLaunch(c.graph_exec, c.stream), "launching the plan's graph");
    else m.enqueue_steps(c, device_inputs);
    ++c.runs;
    for (size_t i = 0; i < host_outputs.size(); ++i) {
      if (!m.output_bytes[i]) continue;
      check(
          hipMemcpyAsync(host_outputs[i], c.outputs[i].get(), m.output_bytes[i],
                         outputs_on_device ? hipMemcpyDeviceToDevice : hipMemcpyDeviceToHost,
                         c.stream),
          outputs_on_device ? "copying an output on the device" : "copying an output to the host");
      if (!outputs_on_device) device_to_host_bytes += m.output_bytes[i];
    }
    const hipError_t status = hipStreamSynchronize(c.stream);
    if (status != hipSuccess)
      throw std::runtime_error(m.device +
                               ": running the plan failed: " + hipGetErrorString(status));
  } catch (...) {
    // nothing queued may still write the caller's outputs or read its inputs after we return
    (void)hipStreamSynchronize(c.stream);
    throw;
  }
}

std::vector<std::pair<std::string, double>> GpuExecutor::profile(
    const std::vector<InputBuffer>& inputs) {
  Impl& m = *impl_;
  if (inputs.size() != m.input_bytes.size())
    throw std::invalid_argument("GpuExecutor: wrong number of inputs");
  DeviceScope on_device(m.device_id);
  Impl::Lease lease(m);
  RunContext& c = lease.context();
  GateHold gate(false);
  // an event after every step run (a step inside a Loop runs once per iteration): the
  // times of one step's runs are summed
  std::vector<hipEvent_t> events;
  std::vector<size_t> ran;  // ran[k]: the step that ended at events[k + 1]
  std::vector<std::pair<std::string, double>> times;
  std::string failure;
  auto record = [&]() {
    events.push_back(nullptr);
    check(hipEventCreate(&events.back()), "creating a timing event");
    check(hipEventRecord(events.back(), c.stream), "recording a timing event");
  };
  try {
    const std::vector<const void*> device_inputs = m.stage_inputs(c, inputs, false);
    std::vector<const void*> in;
    std::vector<void*> out;
    record();
    for (size_t s = 0; s < m.steps.size();) {
      const size_t next = following(s, m.enqueue_step(c, s, device_inputs, in, out));
      record();
      ran.push_back(s);
      s = next;
    }
    check(hipEventSynchronize(events.back()), "profiling the plan");
    std::vector<double> per_step(m.steps.size(), 0.0);
    for (size_t k = 0; k < ran.size(); ++k) {
      float ms = 0.f;
      check(hipEventElapsedTime(&ms, events[k], events[k + 1]), "reading a timing event");
      per_step[ran[k]] += ms;
    }
    for (size_t s = 0; s < m.steps.size(); ++s) times.emplace_back(m.steps[s].name, per_step[s]);
  } catch (const std::exception& e) {
    failure = e.what();
    (void)hipStreamSynchronize(c.stream);
  }
  for (hipEvent_t e : events)
    if (e) (void)hipEventDestroy(e);
  if (!failure.empty()) throw std::runtime_error(m.device + ": profiling failed: " + failure);
  return times;
}

int64_t GpuExecutor::arena_bytes() const { return impl_->arena_bytes; }
size_t GpuExecutor::num_steps() const { return impl_->steps.size(); }
size_t GpuExecutor::workspace_bytes() const { return impl_->workspace_bytes; }
size_t GpuExecutor::bytes_per_context() const {
  std::lock_guard<std::mutex> lock(impl_->pool_mutex);
  return impl_->contexts.front()->device_bytes();  // the constructor made one
}
size_t GpuExecutor::contexts_created() const {
  std::lock_guard<std::mutex> lock(impl_->pool_mutex);
  return impl_->contexts.size();
}
size_t GpuExecutor::max_contexts() const {
  std::lock_guard<std::mutex> lock(impl_->pool_mutex);
  return impl_->max_contexts;
}
size_t GpuExecutor::device_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->pool_mutex);
  size_t n = impl_->constants.size();
  for (const auto& c : impl_->contexts) n += c->device_bytes();
  return n;
}
std::string GpuExecutor::device_name() const { return impl_->device; }
int GpuExecutor::device_id() const { return impl_->device_id; }
std::string GpuExecutor::blas_backend() const {
  std::lock_guard<std::mutex> lock(impl_->pool_mutex);
  return impl_->contexts.front()->blas->backend();  // the same for every context
}
std::string GpuExecutor::graph_state() const {
  const Impl& m = *impl_;
  if (!m.use_graphs) return "off";
  if (!m.not_capturable.empty()) return "off: " + m.not_capturable;
  std::lock_guard<std::mutex> lock(m.pool_mutex);
  const size_t n = m.contexts.size();
  const std::string replay = m.replaying == n ? "replaying"
                                              : "replaying in " + std::to_string(m.replaying) +
                                                    " of " + std::to_string(n) + " contexts";
  if (m.capture_failures > 0)
    return "kernel by kernel: " + m.first_capture_failure +
           (m.replaying > 0 ? " (" + replay + ")" : "");
  if (m.replaying == 0) return "not captured yet";
  return replay;
}

std::vector<std::string> gpu_kernel_names() { return kernel_names(); }

void* device_alloc(size_t bytes, int device) {
  DeviceScope on_device(device);
  GateHold gate(false);
  void* data = nullptr;
  if (bytes) check(hipMalloc(&data, bytes), "allocating an output on the device");
  return data;
}

void device_free(void* data, int device) noexcept {
  if (!data) return;
  try {
    DeviceScope on_device(device);
    GateHold gate(false);
    (void)hipFree(data);
  } catch (...) {
  }
}

void device_to_host(void* dst, const void* src, size_t bytes, int device) {
  DeviceScope on_device(device);
  GateHold gate(false);
  if (bytes) check(hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost), "copying to the host");
}

std::pair<uint64_t, uint64_t> run_transfer_bytes() {
  return {host_to_device_bytes.load(), device_to_host_bytes.load()};
}

}  // namespace gpu
}  // namespace graphkiln
