// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Pointwise: one generic kernel that interprets the register program the cpu target's
// Pointwise kernel runs (targets/native/lower_pointwise.py writes it; the opcodes' meaning is
// src/core/pointwise_ops.def, compiled here with the device's gk_* math), one output element
// per thread, so one Python lowering feeds both targets:
//   attrs "program":  5 ints per instruction [opcode, dst, a, b, c] (registers, -1 unused);
//   attrs "params":   2 floats per instruction (p0, p1);
//   attrs "num_regs", "result", "compute" ("f32" or "f64": the register type).
// Registers 0..n_inputs-1 hold the inputs, broadcast to the output's shape and converted on
// load; the result register is converted to the output dtype on store. The program and the
// inputs' index maps live in device memory, uploaded when the plan is built.
// When the step carries generated source (attrs "jit_source", "jit_entry", "jit_maps": see
// python/graphkiln/targets/gpu/codegen.py) and a runtime compiler is found (rtc.hpp), the
// kernel runs that instead: the same program with opcodes, dtypes and the pattern of each
// index map baked in, launched with the pointers and then the maps' sizes as arguments
// (size_args_: n, then per mapped input and dim its size, stride, and the size's FastDiv
// magic and shift; codegen.py's size_arguments writes the same list), so that one compiled
// source serves every shape with that pattern.
#include "gpu/common.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "core/pointwise_ops.hpp"
#include "gpu/fast_div.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"
#include "gpu/rtc.hpp"

namespace graphkiln {
namespace gpu {

namespace {

constexpr int kMaxInputs = 16, kMaxRegs = 32;
// size arguments (n included) of a generated kernel at most: codegen.py's MAX_SIZE_ARGUMENTS
constexpr int kMaxSizeArgs = 480;

struct Instr {
  int op, dst, a, b, c;
  double p0, p1;
};

struct InputDesc {
  int dtype = 0;
  int mode = 0;  // 0: same index as the output, 1: one element, 2: mapped
  Strides map;
};

struct Desc {
  int n_inputs = 0, n_instr = 0, result = 0, out_dtype = 0;
  InputDesc in[kMaxInputs];
};

struct Pointers {
  const void* in[kMaxInputs] = {};
  void* out = nullptr;
};

__device__ inline float half_to_float(uint16_t h) { return load_float(F16{h}); }

__device__ inline uint16_t float_to_half(float f) { return store_float<F16>(f).bits; }

__device__ inline float bf16_to_float(uint16_t h) { return __uint_as_float(uint32_t(h) << 16); }

__device__ inline uint16_t float_to_bf16(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x | 0x00400000u) >> 16);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// dtype codes: graphkiln::DType (f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64, bool)
template <typename T>
__device__ inline T load(const void* p, int64_t i, int dtype) {
  switch (dtype) {
    case 0: return static_cast<T>(static_cast<const float*>(p)[i]);
    case 1: return static_cast<T>(static_cast<const double*>(p)[i]);
    case 2: return static_cast<T>(half_to_float(static_cast<const uint16_t*>(p)[i]));
    case 3: return static_cast<T>(bf16_to_float(static_cast<const uint16_t*>(p)[i]));
    case 4: return static_cast<T>(static_cast<const int8_t*>(p)[i]);
    case 5: return static_cast<T>(static_cast<const int16_t*>(p)[i]);
    case 6: return static_cast<T>(static_cast<const int32_t*>(p)[i]);
    case 7: return static_cast<T>(static_cast<const int64_t*>(p)[i]);
    case 8: return static_cast<T>(static_cast<const uint8_t*>(p)[i]);
    case 9: return static_cast<T>(static_cast<const uint16_t*>(p)[i]);
    case 10: return static_cast<T>(static_cast<const uint32_t*>(p)[i]);
    case 11: return static_cast<T>(static_cast<const uint64_t*>(p)[i]);
    default: return static_cast<T>(static_cast<const uint8_t*>(p)[i]);
  }
}

template <typename T>
__device__ inline void store(void* p, int64_t i, int dtype, T v) {
  switch (dtype) {
    case 0: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case 1: static_cast<double*>(p)[i] = static_cast<double>(v); break;
    case 2: static_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v)); break;
    case 3: static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); break;
    case 4: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<int64_t>(v)); break;
    case 5: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(static_cast<int64_t>(v)); break;
    case 6: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(static_cast<int64_t>(v)); break;
    case 7: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case 8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v)); break;
    case 9: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(static_cast<int64_t>(v)); break;
    case 10: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(static_cast<int64_t>(v)); break;
    case 11: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(static_cast<int64_t>(v)); break;
    default: static_cast<uint8_t*>(p)[i] = v != T(0) ? 1 : 0; break;
  }
}

// The gk_* math that src/core/pointwise_ops.def's expressions call, on the device
#define GK_PW_FN __device__ __forceinline__
#define GK_DEVICE_MATH1(name) \
  template <typename T> \
  __device__ __forceinline__ T gk_##name(T x) { \
    return name(x); \
  }
GK_DEVICE_MATH1(exp)
GK_DEVICE_MATH1(expm1)
GK_DEVICE_MATH1(log)
GK_DEVICE_MATH1(log1p)
GK_DEVICE_MATH1(sqrt)
GK_DEVICE_MATH1(fabs)
GK_DEVICE_MATH1(floor)
GK_DEVICE_MATH1(ceil)
GK_DEVICE_MATH1(rint)
GK_DEVICE_MATH1(trunc)
GK_DEVICE_MATH1(sin)
GK_DEVICE_MATH1(cos)
GK_DEVICE_MATH1(tan)
GK_DEVICE_MATH1(asin)
GK_DEVICE_MATH1(acos)
GK_DEVICE_MATH1(atan)
GK_DEVICE_MATH1(sinh)
GK_DEVICE_MATH1(cosh)
GK_DEVICE_MATH1(asinh)
GK_DEVICE_MATH1(acosh)
GK_DEVICE_MATH1(atanh)
GK_DEVICE_MATH1(tanh)
GK_DEVICE_MATH1(erf)
#undef GK_DEVICE_MATH1
template <typename T>
__device__ __forceinline__ T gk_pow(T x, T y) {
  return pow(x, y);
}
template <typename T>
__device__ __forceinline__ T gk_fmod(T x, T y) {
  return fmod(x, y);
}
template <typename T>
__device__ __forceinline__ T gk_round_f16(T x) {
  return static_cast<T>(half_to_float(float_to_half(static_cast<float>(x))));
}
template <typename T>
__device__ __forceinline__ T gk_round_bf16(T x) {
  const float f = static_cast<float>(x);
  if ((__float_as_uint(f) & 0x7fffffffu) > 0x7f800000u) return x;
  return static_cast<T>(bf16_to_float(float_to_bf16(f)));
}
// truncate, non-finite -> 0, wrap to `bits` (signed or not), as gk_to_int on the CPU
template <typename T>
__device__ __forceinline__ T gk_to_int(T x, int bits, bool is_signed) {
  if (!(x == x) || x - x != T(0)) return T(0);
  const T t = trunc(x);
  if (bits >= 64) return t;
  const int64_t v = static_cast<int64_t>(t);
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  const uint64_t low = static_cast<uint64_t>(v) & mask;
  if (is_signed && (low >> (bits - 1))) return T(static_cast<int64_t>(low) - (int64_t(1) << bits));
  return T(static_cast<int64_t>(low));
}

#define GK_POINTWISE GK_POINTWISE_FUNCTOR
#include "core/pointwise_ops.def"
#undef GK_POINTWISE

template <typename T>
__device__ T apply(const Instr& in, T a, T b, T c) {
  const T p0 = static_cast<T>(in.p0), p1 = static_cast<T>(in.p1);
  switch (in.op) {
#define GK_POINTWISE(Name, ...) \
  case k##Name: return PwFn##Name::template eval<T>(a, b, c, p0, p1);
#include "core/pointwise_ops.def"
#undef GK_POINTWISE
    default: return static_cast<T>(NAN);
  }
}

template <typename T>
__global__ void pointwise_kernel(const Desc* __restrict__ desc, const Instr* __restrict__ code,
                                 Pointers ptr, int64_t n) {
  const int n_inputs = desc->n_inputs, n_instr = desc->n_instr;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    T r[kMaxRegs];
    for (int k = 0; k < n_inputs; ++k) {
      const InputDesc& in = desc->in[k];
      const int64_t at = in.mode == 0 ? i : (in.mode == 1 ? 0 : map_offset(in.map, i));
      r[k] = load<T>(ptr.in[k], at, in.dtype);
    }
    for (int k = 0; k < n_instr; ++k) {
      const Instr& ins = code[k];
      const T a = ins.a >= 0 ? r[ins.a] : T(0);
      const T b = ins.b >= 0 ? r[ins.b] : T(0);
      const T c = ins.c >= 0 ? r[ins.c] : T(0);
      r[ins.dst] = apply<T>(ins, a, b, c);
    }
    store<T>(ptr.out, i, desc->out_dtype, r[desc->result]);
  }
}

class Pointwise : public Kernel {
 public:
  explicit Pointwise(const KernelSpec& spec) {
    const TensorInfo& out = spec.outputs.at(0);
    if (!out.is_contiguous()) spec_error(spec, "needs a contiguous output");
    n_ = out.numel();
    Desc d;
    d.n_inputs = static_cast<int>(spec.inputs.size());
    if (d.n_inputs > kMaxInputs) spec_error(spec, "more than 16 inputs");
    for (int k = 0; k < d.n_inputs; ++k) {
      if (!spec.has_input(k)) spec_error(spec, "absent input");
      describe_input(spec, spec.inputs[k], out, d.in[k]);
    }
    d.out_dtype = static_cast<int>(out.dtype);
    const std::vector<int64_t> program = spec.attrs.get_ints("program");
    const std::vector<double> params = spec.attrs.get_floats("params");
    const int64_t num_regs = spec.attrs.get_int("num_regs");
    if (num_regs > kMaxRegs) spec_error(spec, "more than 32 registers");
    if (program.size() % 5 != 0 || params.size() != program.size() / 5 * 2)
      spec_error(spec, "program and params differ in length");
    std::vector<Instr> code(program.size() / 5);
    for (size_t k = 0; k < code.size(); ++k) {
      const int64_t* p = &program[5 * k];
      code[k] = Instr{static_cast<int>(p[0]), static_cast<int>(p[1]), static_cast<int>(p[2]),
                      static_cast<int>(p[3]), static_cast<int>(p[4]), params[2 * k],
                      params[2 * k + 1]};
      if (p[0] < 0 || p[0] >= kNumOps) spec_error(spec, "unknown opcode");
      for (int r = 1; r < 5; ++r)
        if (p[r] >= num_regs || (r == 1 && p[r] < 0)) spec_error(spec, "register out of range");
    }
    d.n_instr = static_cast<int>(code.size());
    d.result = static_cast<int>(spec.attrs.get_int("result"));
    if (d.result < 0 || d.result >= num_regs) spec_error(spec, "bad result register");
    f64_ = spec.attrs.get_str("compute", "f32") == "f64";
    if (spec.attrs.has("jit_source")) use_generated(spec, d);
    const size_t bytes = sizeof(Desc) + code.size() * sizeof(Instr);
    check(hipMalloc(&device_, bytes), "allocating a pointwise program");
    check(hipMemcpy(device_, &d, sizeof(Desc), hipMemcpyHostToDevice), "uploading a program");
    if (!code.empty())
      check(hipMemcpy(static_cast<unsigned char*>(device_) + sizeof(Desc), code.data(),
                      code.size() * sizeof(Instr), hipMemcpyHostToDevice),
            "uploading a program");
  }

  ~Pointwise() override {
    if (device_) (void)hipFree(device_);
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    if (jit_) {
      run_generated(inputs, outputs[0], ctx);
      return;
    }
    Pointers ptr;
    for (int k = 0; k < kMaxInputs && inputs && k < n_inputs(); ++k) ptr.in[k] = inputs[k];
    ptr.out = outputs[0];
    const Desc* desc = static_cast<const Desc*>(device_);
    const Instr* code =
        reinterpret_cast<const Instr*>(static_cast<unsigned char*>(device_) + sizeof(Desc));
    if (f64_)
      pointwise_kernel<double><<<blocks_for(n_, 256), 256, 0, ctx.stream>>>(desc, code, ptr, n_);
    else pointwise_kernel<float><<<blocks_for(n_, 256), 256, 0, ctx.stream>>>(desc, code, ptr, n_);
    check_launch("pointwise_kernel");
  }

 private:
  int n_inputs() const { return n_inputs_; }

  // The generated kernel, when it assumed the index maps computed here and it compiles.
  void use_generated(const KernelSpec& spec, const Desc& d) {
    std::vector<int64_t> maps = {n_, d.out_dtype, d.n_inputs};
    for (int k = 0; k < d.n_inputs; ++k) {
      const InputDesc& in = d.in[k];
      maps.insert(maps.end(), {in.dtype, in.mode, in.mode == 2 ? in.map.rank : 0});
      if (in.mode != 2) continue;
      maps.insert(maps.end(), in.map.dims, in.map.dims + in.map.rank);
      maps.insert(maps.end(), in.map.strides, in.map.strides + in.map.rank);
    }
    if (spec.attrs.get_ints("jit_maps") != maps) {
      warn_once("the generated source of Pointwise '" + spec.name +
                "' assumed other index maps; the interpreter runs it");
      return;
    }
    const std::string entry = spec.attrs.get_str("jit_entry");
    if (spec.attrs.has("jit_prefetch")) {
      std::vector<std::vector<std::string>> entries;
      for (const std::string& e : spec.attrs.get_strs("jit_prefetch_entries"))
        entries.push_back({e, e + "_v4"});
      jit_prefetch(spec.attrs.get_strs("jit_prefetch"), entries);
    }
    std::string why_not;
    jit_ = jit_module(spec.attrs.get_str("jit_source"), {entry, entry + "_v4"}, &why_not);
    if (!jit_) {
      if (why_not != "GRAPHKILN_GPU_JIT=0")  // asked for: nothing to say
        warn_once("Pointwise steps run the interpreter: " + why_not);
      return;
    }
    out_size_ = dtype_size(static_cast<DType>(d.out_dtype));
    size_args_ = {n_};
    for (int k = 0; k < d.n_inputs; ++k) {
      if (d.in[k].mode != 2) continue;
      for (int dim = 0; dim < d.in[k].map.rank; ++dim) {
        const int64_t size = d.in[k].map.dims[dim];
        // sizes of 2^31 or more occur only in 64-bit index kernels, which divide plainly
        const FastDiv div(size < (int64_t(1) << 31) ? static_cast<uint32_t>(size) : 1u);
        size_args_.insert(size_args_.end(),
                          {size, d.in[k].map.strides[dim], static_cast<int64_t>(div.magic),
                           static_cast<int64_t>(div.shift)});
      }
    }
    if (size_args_.size() > static_cast<size_t>(kMaxSizeArgs)) {
      jit_.reset();  // codegen.py refuses such maps; a plan from elsewhere may not
      warn_once("Pointwise '" + spec.name + "': index maps too large for a generated kernel");
      return;
    }
    std::vector<int64_t> aligned;
    for (int k = 0; k < d.n_inputs; ++k)
      if (d.in[k].mode == 0) aligned.push_back(k);
    for (int64_t k : spec.attrs.get_ints("jit_aligned", aligned)) {
      if (k < 0 || k >= d.n_inputs) spec_error(spec, "jit_aligned names no input");
      aligned_.push_back({static_cast<int>(k), dtype_size(static_cast<DType>(d.in[k].dtype))});
    }
  }

  void run_generated(const void* const* inputs, void* out, Context& ctx) const {
    void* ptrs[kMaxInputs + 1];
    void* args[kMaxInputs + 1 + kMaxSizeArgs];
    // four elements a thread when the output and the inputs read as vectors are aligned
    bool aligned = reinterpret_cast<uintptr_t>(out) % (4 * out_size_) == 0;
    for (const auto& s : aligned_)
      aligned = aligned && reinterpret_cast<uintptr_t>(inputs[s.first]) % (4 * s.second) == 0;
    for (int k = 0; k < n_inputs_; ++k) ptrs[k] = const_cast<void*>(inputs[k]);
    ptrs[n_inputs_] = out;
    for (int k = 0; k <= n_inputs_; ++k) args[k] = &ptrs[k];
    for (size_t j = 0; j < size_args_.size(); ++j)  // the launch copies the values
      args[n_inputs_ + 1 + j] = const_cast<int64_t*>(&size_args_[j]);
    const int64_t work = aligned ? (n_ + 3) / 4 : n_;
    // a thread per unit of work (grid-stride loops beyond 2**30 units)
    const unsigned blocks = blocks_for(work < (int64_t(1) << 30) ? work : (int64_t(1) << 30), 256);
    jit_->launch(aligned ? 1 : 0, blocks, 256, args, ctx.stream);
  }

  static void warn_once(const std::string& message) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) std::fprintf(stderr, "graphkiln: %s\n", message.c_str());
  }

  void describe_input(const KernelSpec& spec, const TensorInfo& in, const TensorInfo& out,
                      InputDesc& desc) {
    ++n_inputs_;
    if (in.rank() > out.rank()) spec_error(spec, "an input has a higher rank than the output");
    desc.dtype = static_cast<int>(in.dtype);
    const bool same = in.dims == out.dims && in.is_contiguous();
    desc.mode = same ? 0 : (in.numel() == 1 ? 1 : 2);
    if (desc.mode != 2) return;
    // right-aligned broadcast: size-1 (or missing) dims read stride 0; runs of dims that
    // stay contiguous together merge, so most maps have one or two dims
    const int shift = out.rank() - in.rank();
    std::vector<int64_t> dims, strides;
    for (int d = 0; d < out.rank(); ++d) {
      const int src = d - shift;
      if (src >= 0 && in.dims[src] != 1 && in.dims[src] != out.dims[d])
        spec_error(spec, "an input does not broadcast to the output");
      const int64_t stride = (src < 0 || in.dims[src] == 1) ? 0 : in.strides[src];
      if (out.dims[d] == 1) continue;
      if (!dims.empty() && strides.back() == stride * out.dims[d]) {
        dims.back() *= out.dims[d];
        strides.back() = stride;
      } else {
        dims.push_back(out.dims[d]);
        strides.push_back(stride);
      }
    }
    if (dims.size() > static_cast<size_t>(kMaxRank)) spec_error(spec, "rank above 8");
    desc.map.rank = static_cast<int>(dims.size());
    for (int d = 0; d < desc.map.rank; ++d) {
      desc.map.dims[d] = dims[d];
      desc.map.strides[d] = strides[d];
    }
  }

  void* device_ = nullptr;
  std::shared_ptr<const JitModule> jit_;
  std::vector<int64_t> size_args_;  // the generated kernel's arguments after its pointers
  size_t out_size_ = 0;
  std::vector<std::pair<int, size_t>> aligned_;  // inputs the _v4 entry reads as vectors
  int n_inputs_ = 0;
  int64_t n_ = 0;
  bool f64_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_pointwise(const KernelSpec& spec) {
  return std::make_unique<Pointwise>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
