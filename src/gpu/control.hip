// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Control steps on the GPU: an If or Loop compiled in line in its plan
// (targets/native/lower_control.py), with the contracts of src/cpu/control.cpp:
//   Branch (the bool condition; attr target): on into the then-branch when it holds, else
//     at step `target`;
//   Jump (attr target): on at step `target`;
//   LoopTest (iteration number i64, condition bool, trip count i64 or absent; attr target):
//     into the body while the condition holds and the iteration number is below the count,
//     else at step `target`;
//   LoopNext (the iteration number, then outer values kept alive; output: the iteration
//     number; attr target): adds one on the device and goes back to step `target`.
// Branch and LoopTest read their scalars back: one small copy to pinned host memory and one
// sync of the run's stream per If / per iteration (what the plan computed so far has to be
// finished anyway for the choice); LoopNext counts on the device. These steps pick the next step on the host, so a plan holding
// one is not captured into a graph (Kernel::not_capturable).
//   Fill (attr bits; one output): every element set to the low bytes of `bits` (ConstantOfShape,
//     a Loop's first iteration number and condition, Dropout's mask).
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gpu/common.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {
namespace {

// Scalars read back by a control step: pinned, so the copy is a real async copy, one block
// per thread (runs of several contexts read back at once; a run is one thread).
struct ReadBack {
  unsigned char* bytes = nullptr;
  ReadBack() { check(hipHostMalloc(reinterpret_cast<void**>(&bytes), 32, 0), "hipHostMalloc"); }
  ~ReadBack() { (void)hipHostFree(bytes); }
};

unsigned char* read_back(const void* const* sources, const size_t* sizes, int n,
                         hipStream_t stream) {
  thread_local ReadBack buffer;
  size_t offset = 0;
  for (int i = 0; i < n; ++i) {
    if (sources[i])
      check(hipMemcpyAsync(buffer.bytes + offset, sources[i], sizes[i], hipMemcpyDeviceToHost,
                           stream),
            "reading a control value back");
    offset += 8;
  }
  check(hipStreamSynchronize(stream), "reading a control value back");
  return buffer.bytes;
}

class ControlKernel : public Kernel {
 public:
  explicit ControlKernel(int64_t target) : target_(target) {}
  std::string not_capturable() const override {
    return "the plan has control flow (an If or Loop picks its steps on the host)";
  }

 protected:
  int64_t target_;
};

class BranchKernel : public ControlKernel {
 public:
  using ControlKernel::ControlKernel;
  void run(const void* const* inputs, void* const*, Context& ctx) const override {
    const size_t size = 1;
    const unsigned char* cond = read_back(inputs, &size, 1, ctx.stream);
    ctx.next_step = cond[0] != 0 ? -1 : target_;
  }
};

class JumpKernel : public ControlKernel {
 public:
  using ControlKernel::ControlKernel;
  void run(const void* const*, void* const*, Context& ctx) const override {
    ctx.next_step = target_;
  }
};

class LoopTestKernel : public ControlKernel {
 public:
  using ControlKernel::ControlKernel;
  void run(const void* const* inputs, void* const*, Context& ctx) const override {
    const size_t sizes[3] = {8, 1, 8};
    const unsigned char* v = read_back(inputs, sizes, 3, ctx.stream);
    int64_t iteration = 0, count = 0;
    std::memcpy(&iteration, v, 8);
    std::memcpy(&count, v + 16, 8);
    const bool go_on = v[8] != 0 && (inputs[2] == nullptr || iteration < count);
    ctx.next_step = go_on ? -1 : target_;
  }
};

__global__ void increment_i64(const int64_t* in, int64_t* out) { *out = *in + 1; }

class LoopNextKernel : public ControlKernel {
 public:
  using ControlKernel::ControlKernel;
  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    increment_i64<<<1, 1, 0, ctx.stream>>>(static_cast<const int64_t*>(inputs[0]),
                                           static_cast<int64_t*>(outputs[0]));
    check_launch("LoopNext");
    ctx.next_step = target_;
  }
};

template <typename T>
__global__ void fill_kernel(T* out, T value, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = value;
}

class FillKernel : public Kernel {
 public:
  FillKernel(int64_t bits, size_t element_size, int64_t n)
      : bits_(bits), element_size_(element_size), n_(n) {}
  void run(const void* const*, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    switch (element_size_) {
      case 1: launch<uint8_t>(outputs[0], ctx); break;
      case 2: launch<uint16_t>(outputs[0], ctx); break;
      case 4: launch<uint32_t>(outputs[0], ctx); break;
      default: launch<uint64_t>(outputs[0], ctx); break;
    }
  }

 private:
  template <typename T>
  void launch(void* out, Context& ctx) const {
    T value;
    std::memcpy(&value, &bits_, sizeof(T));  // little-endian: the low bytes of bits
    const unsigned blocks = blocks_for(n_ < 65536 * 256 ? n_ : 65536 * 256, 256);
    fill_kernel<T><<<blocks, 256, 0, ctx.stream>>>(static_cast<T*>(out), value, n_);
    check_launch("Fill");
  }
  int64_t bits_;
  size_t element_size_;
  int64_t n_;
};

[[noreturn]] void control_error(const KernelSpec& spec, const std::string& message) {
  throw std::invalid_argument(spec.kernel + " '" + spec.name + "': " + message);
}

void check_scalar(const KernelSpec& spec, size_t i, DType dtype, const char* what) {
  if (spec.inputs[i].dtype != dtype || spec.inputs[i].numel() != 1)
    control_error(spec, std::string(what) + " must be one " + dtype_name(dtype));
}

}  // namespace

std::unique_ptr<Kernel> make_branch(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || !spec.outputs.empty())
    control_error(spec, "one input (the condition) and no outputs");
  check_scalar(spec, 0, DType::boolean, "the condition");
  return std::make_unique<BranchKernel>(spec.attrs.get_int("target"));
}

std::unique_ptr<Kernel> make_jump(const KernelSpec& spec) {
  if (!spec.inputs.empty() || !spec.outputs.empty()) control_error(spec, "no inputs or outputs");
  return std::make_unique<JumpKernel>(spec.attrs.get_int("target"));
}

std::unique_ptr<Kernel> make_loop_test(const KernelSpec& spec) {
  if (spec.inputs.size() != 3 || !spec.outputs.empty())
    control_error(spec, "inputs: iteration number, condition, trip count (or absent); no outputs");
  check_scalar(spec, 0, DType::i64, "the iteration number");
  check_scalar(spec, 1, DType::boolean, "the condition");
  if (spec.has_input(2)) check_scalar(spec, 2, DType::i64, "the trip count");
  return std::make_unique<LoopTestKernel>(spec.attrs.get_int("target"));
}

std::unique_ptr<Kernel> make_loop_next(const KernelSpec& spec) {
  if (spec.inputs.empty() || spec.outputs.size() != 1)
    control_error(spec,
                  "the iteration number (and values kept alive) in, the iteration number out");
  check_scalar(spec, 0, DType::i64, "the iteration number");
  if (spec.outputs[0].dtype != DType::i64 || spec.outputs[0].numel() != 1)
    control_error(spec, "the output must be the iteration number (one i64)");
  return std::make_unique<LoopNextKernel>(spec.attrs.get_int("target"));
}

std::unique_ptr<Kernel> make_fill(const KernelSpec& spec) {
  if (!spec.inputs.empty() || spec.outputs.size() != 1)
    control_error(spec, "one output, no inputs");
  return std::make_unique<FillKernel>(spec.attrs.get_int("bits", 0),
                                      dtype_size(spec.outputs[0].dtype), spec.outputs[0].numel());
}

}  // namespace gpu
}  // namespace graphkiln
