// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Host steps: a gpu plan's step that runs one of the cpu core's kernels (src/cpu) on the host,
// for the ops the gpu has no kernel for yet (targets/gpu/host_steps.py lists them; the
// lowering names such a step "Host.<cpu kernel>"). A run: the step's run-time inputs are
// copied to pinned host memory and the run's stream synchronized, the cpu kernel runs, its
// outputs are copied back and the stream synchronized again (the staging is reused by the
// next host step of the run). Constant inputs are copied to the host once, at build, and
// handed to the cpu kernel as its constants (it may pack them). The cpu kernel's run() is not
// const, so runs of several contexts take turns on one step (a mutex), and a plan holding a
// host step is not captured into a graph (Kernel::not_capturable).
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/kernel.hpp"
#include "gpu/common.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {
namespace {

// Elements from a tensor's first to its last (strides >= 0, as the plans' slots have).
size_t extent_bytes(const TensorInfo& t) {
  if (t.numel() == 0) return 0;
  const std::vector<int64_t> strides =
      t.strides.size() == t.dims.size() ? t.strides : row_major_strides(t.dims);
  int64_t last = 0;
  for (int d = 0; d < t.rank(); ++d) last += (t.dims[d] - 1) * strides[d];
  return static_cast<size_t>(last + 1) * dtype_size(t.dtype);
}

// Pinned staging that grows to the largest host step of a run; one per thread (a run is
// one thread, and a run's host steps come one after another).
class Staging {
 public:
  ~Staging() {
    if (data_) (void)hipHostFree(data_);
  }
  unsigned char* reserve(size_t bytes) {
    if (bytes > size_) {
      if (data_) (void)hipHostFree(data_);
      data_ = nullptr;
      size_ = 0;
      check(hipHostMalloc(reinterpret_cast<void**>(&data_), bytes, 0),
            "allocating a host step's staging memory");
      size_ = bytes;
    }
    return data_;
  }

 private:
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

size_t aligned(size_t n) { return (n + 255) / 256 * 256; }

class HostStepKernel : public Kernel {
 public:
  explicit HostStepKernel(const KernelSpec& gpu_spec) {
    KernelSpec spec = gpu_spec;
    spec.kernel = gpu_spec.kernel.substr(kPrefix.size());
    constants_.resize(spec.inputs.size());
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      TensorInfo& t = spec.inputs[i];
      if (t.constant) {  // the executor's pointer lives only while it builds: keep a copy
        const auto* bytes = static_cast<const unsigned char*>(t.constant);
        constants_[i].assign(bytes, bytes + extent_bytes(t));
        t.constant = constants_[i].data();
      }
      input_bytes_.push_back(spec.has_input(i) ? extent_bytes(t) : 0);
    }
    for (const TensorInfo& t : spec.outputs) {
      output_bytes_.push_back(extent_bytes(t));
      // a strided view spans bytes it does not write: they go back up as the device held them
      output_strided_.push_back(output_bytes_.back() != t.nbytes());
    }
    kernel_ = graphkiln::make_kernel(spec);  // the cpu registry; throws naming the step
    name_ = spec.kernel;
  }

  std::string not_capturable() const override {
    return "the plan runs " + name_ + " on the host (the gpu has no kernel for it yet)";
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    thread_local Staging staging;
    size_t total = 0;
    for (size_t i = 0; i < input_bytes_.size(); ++i)
      if (constants_[i].empty()) total += aligned(input_bytes_[i]);
    for (size_t n : output_bytes_) total += aligned(n);
    unsigned char* host = staging.reserve(total ? total : 1);

    std::vector<const void*> in(input_bytes_.size(), nullptr);
    std::vector<void*> out(output_bytes_.size(), nullptr);
    size_t offset = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!inputs[i]) continue;
      if (!constants_[i].empty()) {
        in[i] = constants_[i].data();
        continue;
      }
      in[i] = host + offset;
      if (input_bytes_[i])
        check(hipMemcpyAsync(host + offset, inputs[i], input_bytes_[i], hipMemcpyDeviceToHost,
                             ctx.stream),
              "copying a host step's input to the host");
      offset += aligned(input_bytes_[i]);
    }
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = host + offset;
      if (output_strided_[i] && output_bytes_[i])
        check(hipMemcpyAsync(host + offset, outputs[i], output_bytes_[i], hipMemcpyDeviceToHost,
                             ctx.stream),
              "copying a host step's output to the host");
      offset += aligned(output_bytes_[i]);
    }
    check(hipStreamSynchronize(ctx.stream), "waiting for a host step's inputs");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      kernel_->run(in.data(), out.data());
    }
    for (size_t i = 0; i < out.size(); ++i)
      if (output_bytes_[i])
        check(
            hipMemcpyAsync(outputs[i], out[i], output_bytes_[i], hipMemcpyHostToDevice, ctx.stream),
            "copying a host step's output to the device");
    // the staging is reused by the run's next host step
    check(hipStreamSynchronize(ctx.stream), "copying a host step's outputs to the device");
  }

  static const std::string kPrefix;

 private:
  std::unique_ptr<graphkiln::Kernel> kernel_;
  std::vector<std::vector<unsigned char>> constants_;
  std::vector<size_t> input_bytes_, output_bytes_;
  std::vector<bool> output_strided_;
  std::string name_;
  mutable std::mutex mutex_;
};

const std::string HostStepKernel::kPrefix = "Host.";

}  // namespace

bool is_host_step(const std::string& kernel) { return kernel.rfind("Host.", 0) == 0; }

std::unique_ptr<Kernel> make_host_step(const KernelSpec& spec) {
  return std::make_unique<HostStepKernel>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
