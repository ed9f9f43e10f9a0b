// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Loading cuDNN at run time (NVIDIA build only; see cudnn.hpp). Search order: the path in
// GRAPHKILN_CUDNN_LIBRARY, libcudnn.so.9 on the library path, then beside the libcublas that
// blas.hip loaded (pip's nvidia/cu13/lib, and its sibling nvidia/cudnn/lib).
#include "gpu/common.hpp"
#include "gpu/cudnn.hpp"
#include "gpu/kernel.hpp"

#if defined(GRAPHKILN_GPU_CUDNN)
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <vector>

namespace graphkiln {
namespace gpu {
namespace cudnn {

namespace {

// The folder of an already loaded libcublas, or "".
std::string cublas_folder() {
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
    void* so = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (!so) continue;
    char origin[4096] = {};
    const bool found = dlinfo(so, RTLD_DI_ORIGIN, origin) == 0;
    dlclose(so);
    if (found) return origin;
  }
  return "";
}

void* open_library() {
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("GRAPHKILN_CUDNN_LIBRARY")) candidates.push_back(path);
  candidates.push_back("libcudnn.so.9");
  const std::string folder = cublas_folder();
  if (!folder.empty()) {
    candidates.push_back(folder + "/libcudnn.so.9");
    candidates.push_back(folder + "/../../cudnn/lib/libcudnn.so.9");
  }
  for (const std::string& name : candidates) {
    if (void* so = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return so;
  }
  return nullptr;
}

struct Loaded {
  Api api;
  std::string error;
};

template <typename F>
void bind(void* so, F& slot, const char* symbol, std::string& missing) {
  slot = reinterpret_cast<F>(dlsym(so, symbol));
  if (!slot) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
}

const Loaded& loaded() {
  static const Loaded lib = [] {
    Loaded l;
    void* so = open_library();
    if (!so) {
      l.error = "libcudnn.so.9 not found (library path, GRAPHKILN_CUDNN_LIBRARY, beside libcublas)";
      return l;
    }
    Api& a = l.api;
    std::string missing;
    bind(so, a.create, "cudnnCreate", missing);
    bind(so, a.destroy, "cudnnDestroy", missing);
    bind(so, a.set_stream, "cudnnSetStream", missing);
    bind(so, a.error_string, "cudnnGetErrorString", missing);
    bind(so, a.version, "cudnnGetVersion", missing);
    bind(so, a.create_tensor, "cudnnCreateTensorDescriptor", missing);
    bind(so, a.destroy_tensor, "cudnnDestroyTensorDescriptor", missing);
    bind(so, a.set_tensor_4d_ex, "cudnnSetTensor4dDescriptorEx", missing);
    bind(so, a.create_filter, "cudnnCreateFilterDescriptor", missing);
    bind(so, a.destroy_filter, "cudnnDestroyFilterDescriptor", missing);
    bind(so, a.set_filter_4d, "cudnnSetFilter4dDescriptor", missing);
    bind(so, a.create_conv, "cudnnCreateConvolutionDescriptor", missing);
    bind(so, a.destroy_conv, "cudnnDestroyConvolutionDescriptor", missing);
    bind(so, a.set_conv_2d, "cudnnSetConvolution2dDescriptor", missing);
    bind(so, a.set_group_count, "cudnnSetConvolutionGroupCount", missing);
    bind(so, a.set_math_type, "cudnnSetConvolutionMathType", missing);
    bind(so, a.output_dim, "cudnnGetConvolution2dForwardOutputDim", missing);
    bind(so, a.forward_algorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7", missing);
    bind(so, a.workspace_size, "cudnnGetConvolutionForwardWorkspaceSize", missing);
    bind(so, a.forward, "cudnnConvolutionForward", missing);
    bind(so, a.bias_activation_forward, "cudnnConvolutionBiasActivationForward", missing);
    bind(so, a.create_activation, "cudnnCreateActivationDescriptor", missing);
    bind(so, a.destroy_activation, "cudnnDestroyActivationDescriptor", missing);
    bind(so, a.set_activation, "cudnnSetActivationDescriptor", missing);
    if (!missing.empty()) {
      l.error = "libcudnn lacks entry points graphkiln uses: " + missing;
    } else if (a.version() < 90000) {
      l.error = "libcudnn " + std::to_string(a.version()) + " is older than cuDNN 9";
    }
    return l;
  }();
  return lib;
}

}  // namespace

const Api* api(std::string* why) {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    if (why) *why = l.error;
    return nullptr;
  }
  return &l.api;
}

std::mutex& handle_mutex() {
  static std::mutex m;
  return m;
}

Handle handle() {
  static std::map<int, Handle> handles;  // device -> handle, guarded by m
  static std::mutex m;
  int device = 0;
  gpu::check(hipGetDevice(&device), "cuDNN handle: hipGetDevice");
  std::lock_guard<std::mutex> lock(m);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  const Api* a = api();
  if (!a) throw std::runtime_error("cuDNN is not available");
  Handle h = nullptr;
  check(a->create(&h), "cudnnCreate");
  handles[device] = h;
  return h;
}

Handle create_handle(cudaStream_t stream) {
  const Api* a = api();
  if (!a) throw std::runtime_error("cuDNN is not available");
  // cuDNN asks for handles to be created one at a time until the first exists; contexts are
  // made rarely, so they simply always take turns
  static std::mutex one_at_a_time;
  std::lock_guard<std::mutex> turn(one_at_a_time);
  Handle h = nullptr;
  check(a->create(&h), "cudnnCreate");
  const Status status = a->set_stream(h, stream);
  if (status != kSuccess) {
    a->destroy(h);
    check(status, "cudnnSetStream");
  }
  return h;
}

void destroy_handle(Handle h) {
  if (!h) return;
  if (const Api* a = api()) a->destroy(h);
}

void check(Status status, const char* what) {
  if (status == kSuccess) return;
  const Api* a = api();
  const std::string message = a ? a->error_string(status) : "cuDNN not loaded";
  throw std::runtime_error(std::string(what) + ": " + message + " (cudnnStatus_t " +
                           std::to_string(status) + ")");
}

}  // namespace cudnn
}  // namespace gpu
}  // namespace graphkiln

#endif  // GRAPHKILN_GPU_CUDNN
