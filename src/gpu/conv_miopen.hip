// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Conv" steps on MIOpen (AMD builds, when libMIOpen loads and accepts the step; the factory
// in conv_cudnn.hip asks here first and falls back to conv.hip's kernel). A step is one
// miopenConvolutionForward call followed, when the step has a bias, a residual or a ReLU, by
// conv_step's epilogue kernel. The algorithm: the tuning database's variant (MIOpen's k-th
// Find result), else the fastest that miopenFindConvolutionForwardAlgorithm reports for the
// step's shapes, found at build on scratch buffers (MIOpen keeps what it measured in its own
// find database, so later builds of the same shapes are quick). Layout: contiguous NCHW x, w
// and y (channels-last data stays on cuDNN); float32, float16 and bfloat16.
// Threads: descriptors and the algorithm are set at build and only read after; runs call
// MIOpen on their execution context's own handle (Context::dnn, bound to the context's
// stream), builds use the process's build handle under its lock (miopen.hpp).
#include "gpu/common.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "gpu/conv_epilogue.hpp"
#include "gpu/conv_miopen.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/miopen.hpp"

#if defined(GRAPHKILN_GPU_MIOPEN)

namespace graphkiln {
namespace gpu {

namespace {

using conv_step::Epilogue;
using conv_step::Layout;
using conv_step::ScratchBuffer;

int miopen_type(DType t) {
  return t == DType::f16 ? miopen::kHalf : t == DType::bf16 ? miopen::kBfloat16 : miopen::kFloat;
}

class MiopenConv : public Kernel {
 public:
  MiopenConv(const miopen::Api& a, const KernelSpec& spec, const Epilogue& e)
      : api_(a), epilogue_(e), name_(spec.name) {}

  ~MiopenConv() override {
    if (x_desc_) api_.destroy_tensor(x_desc_);
    if (w_desc_) api_.destroy_tensor(w_desc_);
    if (y_desc_) api_.destroy_tensor(y_desc_);
    if (conv_desc_) api_.destroy_conv(conv_desc_);
  }

  size_t workspace_bytes() const override { return workspace_; }
  bool uses_dnn() const override { return true; }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (!ctx.dnn)
      throw std::runtime_error("Conv step '" + name_ + "': no MIOpen handle in the context");
    const float one = 1.f, zero = 0.f;
    miopen::check(api_.forward(ctx.dnn, &one, x_desc_, inputs[0], w_desc_, inputs[1], conv_desc_,
                               algo_, &zero, y_desc_, outputs[0], ctx.workspace, workspace_),
                  "miopenConvolutionForward");
    if (has_bias_ || epilogue_.has_z || epilogue_.relu)
      conv_step::launch_epilogue(dtype_, outputs[0], has_bias_ ? inputs[2] : nullptr,
                                 epilogue_.has_z ? inputs[3] : nullptr, channels_, plane_, total_,
                                 epilogue_.relu, ctx.stream);
  }

  // Descriptors and the algorithm; false with *why set when MIOpen does not take the step.
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
    if (!x.is_contiguous() || !w.is_contiguous() || !y.is_contiguous())
      return refuse("x, w and y not all contiguous NCHW");
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
    const int64_t variant = spec.attrs.get_int("variant", 0);
    const int wanted = variant >= 1 && variant < conv_step::kConvHipVariant
                           ? static_cast<int>((variant - 1) % conv_step::kVariantAlgos)
                           : 0;  // the fastest, or the tuned k-th
    channels_ = y.dims[1];
    plane_ = y.dims[2] * y.dims[3];
    total_ = y.numel();

    if (!tensor_desc(&x_desc_, x) || !tensor_desc(&w_desc_, w) || !tensor_desc(&y_desc_, y))
      return refuse("tensor descriptor");
    // MIOpen pads symmetrically: pad by the leading pads; the trailing ones only decide how
    // many output rows / columns exist, checked against y below
    if (api_.create_conv(&conv_desc_) != miopen::kSuccess ||
        api_.init_conv(conv_desc_, miopen::kConvolution, int(pads[0]), int(pads[1]),
                       int(strides[0]), int(strides[1]), int(dilations[0]),
                       int(dilations[1])) != miopen::kSuccess ||
        api_.set_group_count(conv_desc_, int(group)) != miopen::kSuccess)
      return refuse("convolution descriptor (pads, strides, dilations or groups)");
    int on = 0, oc = 0, oh = 0, ow = 0;
    if (api_.output_dim(conv_desc_, x_desc_, w_desc_, &on, &oc, &oh, &ow) != miopen::kSuccess ||
        on != y.dims[0] || oc != y.dims[1] || oh != y.dims[2] || ow != y.dims[3])
      return refuse("asymmetric pads that change the output size");

    // The build handle is shared by every build in the process: held from the workspace query
    // to the end of Find.
    std::lock_guard<std::mutex> lock(miopen::handle_mutex());
    miopen::Handle build_handle = miopen::handle();
    size_t find_bytes = 0;
    if (api_.workspace_size(build_handle, w_desc_, x_desc_, conv_desc_, y_desc_, &find_bytes) !=
        miopen::kSuccess)
      return refuse("miopenConvolutionForwardGetWorkSpaceSize failed");
    if (find_bytes > conv_step::kWorkspaceCap) find_bytes = conv_step::kWorkspaceCap;
    ScratchBuffer xb(x.nbytes()), wb(w.nbytes()), yb(y.nbytes()), ws(find_bytes);
    if (!xb.p || !wb.p || !yb.p || (find_bytes && !ws.p))
      return refuse("no device memory for Find's scratch buffers");
    miopen::AlgoPerf perf[miopen::kFindCount] = {};
    int count = 0;
    const miopen::Status found = api_.find_forward(build_handle, x_desc_, xb.p, w_desc_, wb.p,
                                                   conv_desc_, y_desc_, yb.p, miopen::kFindCount,
                                                   &count, perf, ws.p, find_bytes, false);
    if (hipDeviceSynchronize() != hipSuccess || hipGetLastError() != hipSuccess)
      return refuse("the device failed during miopenFindConvolutionForwardAlgorithm");
    if (found != miopen::kSuccess || count < 1)
      return refuse("miopenFindConvolutionForwardAlgorithm found no algorithm (status " +
                    std::to_string(found) + ")");
    // Find returns its results fastest first: the wanted one of those within the workspace
    // cap, else the last of them
    int usable[miopen::kFindCount] = {};
    int n_usable = 0;
    for (int i = 0; i < count && i < miopen::kFindCount; ++i)
      if (perf[i].memory <= find_bytes) usable[n_usable++] = i;
    if (n_usable == 0)
      return refuse("every algorithm MIOpen found needs more workspace than allowed");
    const int pick = usable[wanted < n_usable ? wanted : n_usable - 1];
    algo_ = perf[pick].fwd_algo;
    workspace_ = perf[pick].memory;
    if (verbose())
      std::fprintf(stderr,
                   "graphkiln MIOpen conv '%s': algo %d workspace %zu, %.4f ms (%d found)\n",
                   name_.c_str(), algo_, workspace_, perf[pick].time, count);
    return true;
  }

  static bool verbose() {
    const char* v = std::getenv("GRAPHKILN_GPU_MIOPEN_VERBOSE");
    return v && std::strcmp(v, "0") != 0 && v[0] != '\0';
  }

 private:
  bool tensor_desc(miopen::TensorDesc* d, const TensorInfo& t) {
    if (api_.create_tensor(d) != miopen::kSuccess) return false;
    const int dims[4] = {int(t.dims[0]), int(t.dims[1]), int(t.dims[2]), int(t.dims[3])};
    const int strides[4] = {int(t.strides[0]), int(t.strides[1]), int(t.strides[2]),
                            int(t.strides[3])};
    return api_.set_tensor(*d, miopen_type(t.dtype), 4, dims, strides) == miopen::kSuccess;
  }

  const miopen::Api& api_;
  Epilogue epilogue_;
  std::string name_;
  miopen::TensorDesc x_desc_ = nullptr, w_desc_ = nullptr, y_desc_ = nullptr;
  miopen::ConvDesc conv_desc_ = nullptr;
  DType dtype_ = DType::f32;
  bool has_bias_ = false;
  int algo_ = 0;
  size_t workspace_ = 0;
  int64_t channels_ = 0, plane_ = 0, total_ = 0;
};

bool miopen_disabled() {
  const char* v = std::getenv("GRAPHKILN_GPU_MIOPEN");
  return v && std::strcmp(v, "0") == 0;
}

}  // namespace

std::unique_ptr<Kernel> try_make_miopen_conv(const KernelSpec& spec, const Epilogue& e,
                                             std::string* why) {
  if (miopen_disabled()) {
    *why = "GRAPHKILN_GPU_MIOPEN=0";
    return nullptr;
  }
  if (spec.attrs.get_int("variant", 0) == conv_step::kConvHipVariant) {
    *why = "the tuned variant is conv.hip's kernel";
    return nullptr;
  }
  const miopen::Api* a = miopen::api(why);
  if (!a) return nullptr;
  auto k = std::make_unique<MiopenConv>(*a, spec, e);
  if (!k->build(spec, why)) {
    if (MiopenConv::verbose())
      std::fprintf(stderr, "graphkiln MIOpen conv '%s': not used (%s)\n", spec.name.c_str(),
                   why->c_str());
    return nullptr;
  }
  return k;
}

std::string miopen_status() {
  if (miopen_disabled()) return "off: GRAPHKILN_GPU_MIOPEN=0";
  std::string why;
  if (!miopen::api(&why)) return "off: " + why;
  return "miopen";
}

}  // namespace gpu
}  // namespace graphkiln

#else  // no MIOpen in this build (NVIDIA)

namespace graphkiln {
namespace gpu {

std::string miopen_status() { return "off: this build has no MIOpen (NVIDIA)"; }

}  // namespace gpu
}  // namespace graphkiln

#endif  // GRAPHKILN_GPU_MIOPEN
