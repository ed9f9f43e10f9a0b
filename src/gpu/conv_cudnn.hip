// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The factory of "Conv" steps. A Conv step computes y = act(conv(x, w) + bias + z): inputs x, w,
// optional bias (input 2) and optional residual z (input 3, y's shape and type), attribute
// activation "relu" or absent (targets/gpu/lower_conv_epilogue.py fuses those epilogues).
// On NVIDIA builds, cuDNN (cudnn.hpp) runs the step when the library loads and accepts it:
// with a ReLU, one cudnnConvolutionBiasActivationForward call; otherwise
// cudnnConvolutionForward and, when there is a bias or residual, the epilogue kernel below.
// The call form and algorithm: the tuning database's variant, else the first of cuDNN's
// heuristic choices (fused call first) that a trial run on scratch buffers accepts
// (GRAPHKILN_GPU_CUDNN_CANDIDATES > 1 times that many of each form and keeps the fastest).
// On AMD builds MIOpen runs NCHW steps when it loads and accepts them (conv_miopen.hip).
// Elsewhere (GRAPHKILN_GPU_CUDNN=0 or GRAPHKILN_GPU_MIOPEN=0, the library missing or refusing
// the shapes) conv.hip's kernel runs, followed by the epilogue kernel (conv_epilogue.hip) when
// the step has a residual or an activation, so a plan means the same on every build.
// float32 runs with FMA math (no TF32) unless the step's fast_math attribute allows TF32;
// float16 / bfloat16 use tensor cores, with float32 accumulation.
// Layouts: x, y and z either all contiguous NCHW or all packed channels-last (NCHW dims with
// NHWC strides, targets/gpu/conv_layout.py), w contiguous [K, C, R, S] or packed KRSC; the
// channels-last form (half-precision convolutions on tensor cores without transposes) needs
// cuDNN: conv.hip reads NCHW only. At batch 1 (NCHW, no variant, CANDIDATES unset) conv.hip's
// im2col + GEMM runs: cuDNN's first heuristic choice was 3-6x slower on most of resnet50's batch-1 layers on
// the H200 (benchmarks/results/tuning_gpu_h200.md); the tuner can still pick cuDNN there.
// GRAPHKILN_GPU_CUDNN_VERBOSE=1 prints each Conv step's choice to stderr at build;
// GRAPHKILN_GPU_CUDNN_CANDIDATES=N times cuDNN's first N algorithms (default 1: no timing).
// Attribute "variant" (set by graphkiln.tuning.gpu from the tuning database) fixes the choice
// instead, with no timing: 1..kVariantAlgos the fused call with cuDNN's k-th heuristic
// algorithm, kVariantAlgos+1..2*kVariantAlgos the plain call with the k-th, kConvHipVariant
// conv.hip's kernel. A variant cuDNN refuses here falls back to conv.hip's kernel.
// Threads: the step's descriptors and choice are made at build and only read after; runs call
// cuDNN on their execution context's own handle (Context::dnn, bound to the context's
// stream), builds on the process's build handle under its lock (cudnn.hpp).
#include "gpu/common.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "gpu/conv_epilogue.hpp"
#include "gpu/conv_miopen.hpp"
#include "gpu/cudnn.hpp"
#include "gpu/cudnn_status.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

using conv_step::Epilogue;
using conv_step::kConvHipVariant;
using conv_step::kVariantAlgos;
using conv_step::kWorkspaceCap;
using conv_step::launch_epilogue;
using conv_step::Layout;
using conv_step::layout_of;
using conv_step::read_epilogue;

bool verbose() {
  const char* v = std::getenv("GRAPHKILN_GPU_CUDNN_VERBOSE");
  return v && std::strcmp(v, "0") != 0 && v[0] != '\0';
}

bool cudnn_disabled() {
  const char* v = std::getenv("GRAPHKILN_GPU_CUDNN");
  return v && std::strcmp(v, "0") == 0;
}

// conv.hip's kernel (x, w, bias) followed by the residual / activation epilogue
class ConvThenEpilogue : public Kernel {
 public:
  ConvThenEpilogue(const KernelSpec& spec, const Epilogue& e) : epilogue_(e) {
    KernelSpec inner = spec;
    inner.inputs.resize(3);
    inner.present.resize(3, false);
    inner_ = make_conv(inner);
    const TensorInfo& y = spec.outputs.at(0);
    if (!y.is_contiguous()) spec_error(spec, "needs a contiguous output");
    dtype_ = y.dtype;
    channels_ = y.dims.at(1);
    plane_ = y.dims.at(2) * y.dims.at(3);
    total_ = y.numel();
  }
  size_t workspace_bytes() const override { return inner_->workspace_bytes(); }
  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    inner_->run(inputs, outputs, ctx);
    launch_epilogue(dtype_, outputs[0], nullptr, epilogue_.has_z ? inputs[3] : nullptr, channels_,
                    plane_, total_, epilogue_.relu, ctx.stream);
  }

 private:
  std::unique_ptr<Kernel> inner_;
  Epilogue epilogue_;
  DType dtype_ = DType::f32;
  int64_t channels_ = 0, plane_ = 0, total_ = 0;
};

#if defined(GRAPHKILN_GPU_CUDNN)

// Algorithms timed per call form (fused / plain): GRAPHKILN_GPU_CUDNN_CANDIDATES (1 to 8; 8
// times every algorithm cuDNN offers). The default, 1, times nothing: the first form and
// algorithm in cuDNN's heuristic order that runs is taken, so every build of a plan makes
// the same choice (saved and loaded programs give bit-identical outputs); measured choices
// come from the tuning database (attribute "variant").
int candidates() {
  const char* v = std::getenv("GRAPHKILN_GPU_CUDNN_CANDIDATES");
  const int n = v ? std::atoi(v) : 1;
  return n < 1 ? 1 : n > cudnn::kFwdAlgoCount ? cudnn::kFwdAlgoCount : n;
}
constexpr int kTimedRuns = 3;

int cudnn_type(DType t) {
  return t == DType::f16 ? cudnn::kHalf : t == DType::bf16 ? cudnn::kBfloat16 : cudnn::kFloat;
}

class CudnnConv : public Kernel {
 public:
  // The kernel, or null with *why set when cuDNN does not take this step.
  static std::unique_ptr<Kernel> try_make(const KernelSpec& spec, const Epilogue& e,
                                          std::string* why) {
    const cudnn::Api* a = cudnn::api(why);
    if (!a) return nullptr;
    std::unique_ptr<CudnnConv> k(new CudnnConv(*a, spec, e));
    if (!k->build(spec, why)) return nullptr;
    return k;
  }

  ~CudnnConv() override {
    if (x_desc_) api_.destroy_tensor(x_desc_);
    if (y_desc_) api_.destroy_tensor(y_desc_);
    if (bias_desc_) api_.destroy_tensor(bias_desc_);
    if (w_desc_) api_.destroy_filter(w_desc_);
    if (conv_desc_) api_.destroy_conv(conv_desc_);
    if (act_desc_) api_.destroy_activation(act_desc_);
    if (zero_bias_) (void)hipFree(zero_bias_);
  }

  size_t workspace_bytes() const override { return workspace_; }
  bool uses_dnn() const override { return true; }

  // On the context's own handle (bound to ctx.stream when the context was made: no other
  // run uses it, so no lock and no cudnnSetStream here)
  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (!ctx.dnn)
      throw std::runtime_error("Conv step '" + name_ + "': no cuDNN handle in the context");
    cudnn::check(enqueue(ctx.dnn, inputs, outputs[0], ctx.workspace),
                 fused_ ? "cudnnConvolutionBiasActivationForward" : "cudnnConvolutionForward");
    if (!fused_ && (has_bias_ || epilogue_.has_z || epilogue_.relu))
      launch_epilogue(dtype_, outputs[0], has_bias_ ? inputs[2] : nullptr,
                      epilogue_.has_z ? inputs[3] : nullptr, channels_, plane_, total_,
                      epilogue_.relu, ctx.stream);
  }

 private:
  CudnnConv(const cudnn::Api& a, const KernelSpec& spec, const Epilogue& e)
      : api_(a), epilogue_(e), name_(spec.name) {}

  cudnn::Status enqueue(cudnn::Handle handle, const void* const* inputs, void* y,
                        void* workspace) const {
    const float one = 1.f, zero = 0.f;
    if (!fused_)
      return api_.forward(handle, &one, x_desc_, inputs[0], w_desc_, inputs[1], conv_desc_, algo_,
                          workspace, workspace_, &zero, y_desc_, y);
    const void* bias = has_bias_ ? inputs[2] : zero_bias_;
    const void* z = epilogue_.has_z ? inputs[3] : y;
    return api_.bias_activation_forward(handle, &one, x_desc_, inputs[0], w_desc_, inputs[1],
                                        conv_desc_, algo_, workspace, workspace_,
                                        epilogue_.has_z ? &one : &zero, y_desc_, z, bias_desc_,
                                        bias, act_desc_, y_desc_, y);
  }

  // The step as configured (cuDNN call + epilogue kernel when not fused) on the legacy
  // stream, with the build handle (build time only).
  cudnn::Status enqueue_all(const void* const* inputs, void* y, void* workspace) {
    const cudnn::Status status = enqueue(build_handle_, inputs, y, workspace);
    if (status == cudnn::kSuccess && !fused_ && (has_bias_ || epilogue_.has_z || epilogue_.relu))
      launch_epilogue(dtype_, y, has_bias_ ? inputs[2] : nullptr,
                      epilogue_.has_z ? inputs[3] : nullptr, channels_, plane_, total_,
                      epilogue_.relu, nullptr);
    return status;
  }

  // One checked run, then *ms = the mean time of kTimedRuns more; a status other than
  // kSuccess when cuDNN refuses or the device reports an error.
  cudnn::Status trial(const void* const* inputs, void* y, void* workspace, float* ms) {
    cudnn::Status status = enqueue_all(inputs, y, workspace);
    if (hipDeviceSynchronize() != hipSuccess || hipGetLastError() != hipSuccess)
      return status == cudnn::kSuccess ? -1 : status;
    if (status != cudnn::kSuccess) return status;
    hipEvent_t start = nullptr, stop = nullptr;
    if (hipEventCreate(&start) != hipSuccess || hipEventCreate(&stop) != hipSuccess) return -1;
    (void)hipEventRecord(start, nullptr);
    for (int r = 0; r < kTimedRuns && status == cudnn::kSuccess; ++r)
      status = enqueue_all(inputs, y, workspace);
    (void)hipEventRecord(stop, nullptr);
    const bool timed = hipEventSynchronize(stop) == hipSuccess &&
                       hipEventElapsedTime(ms, start, stop) == hipSuccess;
    (void)hipEventDestroy(start);
    (void)hipEventDestroy(stop);
    *ms /= kTimedRuns;
    return timed ? status : -1;
  }

  bool tensor_desc(cudnn::TensorDesc* d, const TensorInfo& t) {
    if (api_.create_tensor(d) != cudnn::kSuccess) return false;
    return api_.set_tensor_4d_ex(*d, cudnn_type(t.dtype), int(t.dims[0]), int(t.dims[1]),
                                 int(t.dims[2]), int(t.dims[3]), int(t.strides[0]),
                                 int(t.strides[1]), int(t.strides[2]),
                                 int(t.strides[3])) == cudnn::kSuccess;
  }

  bool build(const KernelSpec& spec, std::string* why) {
    auto refuse = [&](const std::string& reason) {
      *why = reason;
      return false;
    };
    const TensorInfo& x = spec.inputs.at(0);
    const TensorInfo& w = spec.inputs.at(1);
    const TensorInfo& y = spec.outputs.at(0);
    if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4) return refuse("not 4-D");
    dtype_ = y.dtype;
    has_bias_ = spec.has_input(2);
    if (!is_float_type(dtype_) || x.dtype != dtype_ || w.dtype != dtype_ ||
        (has_bias_ && spec.inputs.at(2).dtype != dtype_))
      return refuse("not one float type");
    const Layout layout = layout_of(y);
    const Layout w_layout = layout_of(w);
    if (layout == Layout::kOther || layout_of(x) != layout || w_layout == Layout::kOther)
      return refuse("x and y not both contiguous NCHW or both packed NHWC, or w neither");
    if (x.numel() == 0 || y.numel() == 0 || w.numel() == 0) return refuse("empty tensor");
    for (const TensorInfo* t : {&x, &w, &y})
      if (!conv_step::fits_int(t->numel())) return refuse("a tensor of 2^31 elements or more");
    const std::vector<int64_t> pads = spec.attrs.get_ints("pads");
    const std::vector<int64_t> strides = spec.attrs.get_ints("strides");
    const std::vector<int64_t> dilations = spec.attrs.get_ints("dilations");
    const int64_t group = spec.attrs.get_int("group", 1);
    if (pads.size() != 4 || strides.size() != 2 || dilations.size() != 2)
      return refuse("not 2-D pads, strides and dilations");
    if (group < 1 || x.dims[1] % group || w.dims[0] % group || w.dims[1] * group != x.dims[1])
      return refuse("channels do not match the group count");
    const bool fast_math = spec.attrs.get_int("fast_math", 0) != 0;
    const int64_t variant = spec.attrs.get_int("variant", 0);
    const bool fixed = variant >= 1 && variant < kConvHipVariant;  // one (form, algorithm)
    const bool fixed_fused = variant <= kVariantAlgos;
    const int fixed_index = static_cast<int>((variant - 1) % kVariantAlgos);
    channels_ = y.dims[1];
    plane_ = layout == Layout::kNhwc ? 1 : y.dims[2] * y.dims[3];
    total_ = y.numel();

    build_handle_ = cudnn::handle();
    // cuDNN pads symmetrically: pad by the leading pads; the trailing ones only decide how
    // many output rows / columns exist, checked against y below
    if (!tensor_desc(&x_desc_, x) || !tensor_desc(&y_desc_, y)) return refuse("tensor descriptor");
    if (api_.create_filter(&w_desc_) != cudnn::kSuccess ||
        api_.set_filter_4d(w_desc_, cudnn_type(dtype_),
                           w_layout == Layout::kNhwc ? cudnn::kNhwc : cudnn::kNchw, int(w.dims[0]),
                           int(w.dims[1]), int(w.dims[2]), int(w.dims[3])) != cudnn::kSuccess)
      return refuse("filter descriptor");
    if (api_.create_conv(&conv_desc_) != cudnn::kSuccess ||
        api_.set_conv_2d(conv_desc_, int(pads[0]), int(pads[1]), int(strides[0]), int(strides[1]),
                         int(dilations[0]), int(dilations[1]), cudnn::kCrossCorrelation,
                         cudnn::kFloat) != cudnn::kSuccess ||
        api_.set_group_count(conv_desc_, int(group)) != cudnn::kSuccess)
      return refuse("convolution descriptor (pads, strides, dilations or groups)");
    int on = 0, oc = 0, oh = 0, ow = 0;
    if (api_.output_dim(conv_desc_, x_desc_, w_desc_, &on, &oc, &oh, &ow) != cudnn::kSuccess ||
        on != y.dims[0] || oc != y.dims[1] || oh != y.dims[2] || ow != y.dims[3])
      return refuse("asymmetric pads that change the output size");
    if (api_.create_tensor(&bias_desc_) != cudnn::kSuccess ||
        api_.set_tensor_4d_ex(bias_desc_, cudnn_type(dtype_), 1, int(channels_), 1, 1,
                              int(channels_), 1, 1, 1) != cudnn::kSuccess)
      return refuse("bias descriptor");
    if (api_.create_activation(&act_desc_) != cudnn::kSuccess ||
        api_.set_activation(act_desc_,
                            epilogue_.relu ? cudnn::kActivationRelu : cudnn::kActivationIdentity,
                            cudnn::kNotPropagateNan, 0.0) != cudnn::kSuccess)
      return refuse("activation descriptor");

    // The build handle is shared by every build in the process (plans may be built on several
    // threads at once): held from the algorithm query to the end of the trial runs.
    std::lock_guard<std::mutex> lock(cudnn::handle_mutex());
    const bool strict_f32 = dtype_ == DType::f32 && !fast_math;
    const int base_math = strict_f32             ? cudnn::kFmaMath
                          : dtype_ == DType::f32 ? cudnn::kDefaultMath
                                                 : cudnn::kTensorOpMath;
    cudnn::AlgoPerf perf[cudnn::kFwdAlgoCount] = {};
    int count = 0;
    if (api_.set_math_type(conv_desc_, base_math) != cudnn::kSuccess ||
        api_.forward_algorithm_v7(build_handle_, x_desc_, w_desc_, conv_desc_, y_desc_,
                                  cudnn::kFwdAlgoCount, &count, perf) != cudnn::kSuccess)
      return refuse("cudnnGetConvolutionForwardAlgorithm_v7 failed");

    if (api_.set_stream(build_handle_, nullptr) != cudnn::kSuccess) return refuse("cudnnSetStream");
    // scratch operands for the trial runs (zeros); the fused call's missing bias reads zeros
    conv_step::ScratchBuffer xb(x.nbytes()), wb(w.nbytes()), yb(y.nbytes()),
        zb(epilogue_.has_z ? y.nbytes() : 0),
        bb(static_cast<size_t>(channels_) * dtype_size(dtype_));
    if (!xb.p || !wb.p || !yb.p || (epilogue_.has_z && !zb.p) || !bb.p)
      return refuse("no device memory for the trial run");
    if (!has_bias_) {
      if (hipMalloc(&zero_bias_, static_cast<size_t>(channels_) * dtype_size(dtype_)) != hipSuccess)
        return refuse("no device memory for a zero bias");
      (void)hipMemsetAsync(zero_bias_, 0, static_cast<size_t>(channels_) * dtype_size(dtype_),
                           nullptr);
    }
    const void* trial_inputs[4] = {xb.p, wb.p, has_bias_ ? bb.p : nullptr, zb.p};
    // Candidates: the fused call (when there is an epilogue) and the plain call (+ the
    // epilogue kernel), each with cuDNN's first candidates() algorithms; each one that runs is
    // timed over kTimedRuns runs and the fastest is kept.
    const bool needs_epilogue = has_bias_ || epilogue_.has_z || epilogue_.relu;
    const int max_timed = candidates();
    bool found = false;
    bool best_fused = false;
    int best_algo = 0, best_math = base_math;
    size_t best_bytes = 0;
    float best_ms = 0.f;
    std::string tried;
    for (const bool fused : {true, false}) {
      if (found && max_timed == 1) break;  // no comparing: the first form that runs is kept
      if (fused && !needs_epilogue && !fixed) continue;
      if (fixed && fused != fixed_fused) continue;  // a tuned variant: that form only
      int timed = 0;
      for (int i = 0; i < count && (fixed || timed < max_timed); ++i) {
        if (fixed && i != fixed_index) continue;  // ... and that algorithm only
        const cudnn::AlgoPerf& p = perf[i];
        if (p.status != cudnn::kSuccess) continue;
        const int math = strict_f32 ? cudnn::kFmaMath : p.math_type;
        size_t bytes = 0;
        if (api_.set_math_type(conv_desc_, math) != cudnn::kSuccess ||
            api_.workspace_size(build_handle_, x_desc_, w_desc_, conv_desc_, y_desc_, p.algo,
                                &bytes) != cudnn::kSuccess ||
            bytes > kWorkspaceCap)
          continue;
        conv_step::ScratchBuffer ws(bytes);
        if (bytes && !ws.p) continue;
        fused_ = fused;
        algo_ = p.algo;
        workspace_ = bytes;
        float ms = 0.f;
        const cudnn::Status status = trial(trial_inputs, yb.p, ws.p, &ms);
        tried += " " + std::to_string(p.algo) + (fused ? "f" : "") + ":" + std::to_string(status);
        if (status != cudnn::kSuccess) continue;
        ++timed;
        if (!found || ms < best_ms) {
          found = true;
          best_fused = fused;
          best_algo = p.algo;
          best_math = math;
          best_bytes = bytes;
          best_ms = ms;
        }
      }
    }
    if (found) {
      fused_ = best_fused;
      algo_ = best_algo;
      workspace_ = best_bytes;
      if (api_.set_math_type(conv_desc_, best_math) != cudnn::kSuccess)
        return refuse("cudnnSetConvolutionMathType");
      if (verbose())
        std::fprintf(stderr,
                     "graphkiln cuDNN conv '%s': %s algo %d math %d workspace %zu, %.4f ms "
                     "(tried algo:status%s)\n",
                     name_.c_str(), fused_ ? "fused bias+activation" : "forward", algo_, best_math,
                     workspace_, best_ms, tried.c_str());
      return true;
    }
    return refuse("no algorithm ran (algo:status" + tried + ")");
  }

  const cudnn::Api& api_;
  Epilogue epilogue_;
  std::string name_;
  cudnn::Handle build_handle_ = nullptr;  // the process's build handle: trials only, never run()
  cudnn::TensorDesc x_desc_ = nullptr, y_desc_ = nullptr, bias_desc_ = nullptr;
  cudnn::FilterDesc w_desc_ = nullptr;
  cudnn::ConvDesc conv_desc_ = nullptr;
  cudnn::ActDesc act_desc_ = nullptr;
  void* zero_bias_ = nullptr;
  DType dtype_ = DType::f32;
  bool has_bias_ = false, fused_ = false;
  int algo_ = 0;
  size_t workspace_ = 0;
  int64_t channels_ = 0, plane_ = 0, total_ = 0;
};

#endif  // GRAPHKILN_GPU_CUDNN

}  // namespace

std::unique_ptr<Kernel> make_conv_step(const KernelSpec& spec) {
  const Epilogue e = read_epilogue(spec);
  const bool channels_last = layout_of(spec.outputs.at(0)) == Layout::kNhwc;
  std::string why = "this build has no cuDNN";  // AMD: MIOpen says why below
#if defined(GRAPHKILN_GPU_CUDNN)
  const int64_t variant = spec.attrs.get_int("variant", 0);
  // batch 1, NCHW, no tuned variant, no timing asked for: im2col + GEMM (see the top)
  const bool batch_one = variant == 0 && !channels_last && candidates() == 1 &&
                         spec.inputs.at(0).rank() == 4 && spec.inputs[0].dims[0] == 1;
  if (cudnn_disabled()) {
    why = "GRAPHKILN_GPU_CUDNN=0";
  } else if (variant == kConvHipVariant) {
    why = "the tuned variant is conv.hip's kernel";
  } else if (!batch_one) {
    if (std::unique_ptr<Kernel> k = CudnnConv::try_make(spec, e, &why)) return k;
    if (verbose())
      std::fprintf(stderr, "graphkiln cuDNN conv '%s': not used (%s)\n", spec.name.c_str(),
                   why.c_str());
  }
#else
  (void)cudnn_disabled;
  (void)verbose;
#endif  // GRAPHKILN_GPU_CUDNN
#if defined(GRAPHKILN_GPU_MIOPEN)
  if (!channels_last) {
    if (std::unique_ptr<Kernel> k = try_make_miopen_conv(spec, e, &why)) return k;
  }
#endif  // GRAPHKILN_GPU_MIOPEN
  if (channels_last)
    spec_error(spec,
               "channels-last (NHWC) data needs cuDNN, which does not run it here (" + why + ")");
  if (!e.has_z && !e.relu) return make_conv(spec);
  return std::make_unique<ConvThenEpilogue>(spec, e);
}

std::string cudnn_status() {
#if defined(GRAPHKILN_GPU_CUDNN)
  if (cudnn_disabled()) return "off: GRAPHKILN_GPU_CUDNN=0";
  std::string why;
  if (!cudnn::api(&why)) return "off: " + why;
  return "cudnn";
#else
  return "off: this build has no cuDNN (AMD, or built without it)";
#endif
}

}  // namespace gpu
}  // namespace graphkiln
