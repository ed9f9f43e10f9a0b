// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Loading MIOpen at run time (AMD build only; see miopen.hpp). Search order: the path in
// GRAPHKILN_MIOPEN_LIBRARY, libMIOpen.so.1 on the library path, then $ROCM_PATH/lib and
// /opt/rocm/lib.
#include "gpu/common.hpp"
#include "gpu/kernel.hpp"
#include "gpu/miopen.hpp"

#if defined(GRAPHKILN_GPU_MIOPEN)
#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <vector>

namespace graphkiln {
namespace gpu {
namespace miopen {

namespace {

void* open_library() {
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("GRAPHKILN_MIOPEN_LIBRARY")) candidates.push_back(path);
  candidates.push_back("libMIOpen.so.1");
  if (const char* rocm = std::getenv("ROCM_PATH")) {
    candidates.push_back(std::string(rocm) + "/lib/libMIOpen.so.1");
  }
  candidates.push_back("/opt/rocm/lib/libMIOpen.so.1");
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
      l.error =
          "libMIOpen.so.1 not found (library path, GRAPHKILN_MIOPEN_LIBRARY, "
          "$ROCM_PATH/lib, /opt/rocm/lib)";
      return l;
    }
    Api& a = l.api;
    std::string missing;
    bind(so, a.create, "miopenCreate", missing);
    bind(so, a.create_with_stream, "miopenCreateWithStream", missing);
    bind(so, a.destroy, "miopenDestroy", missing);
    bind(so, a.error_string, "miopenGetErrorString", missing);
    bind(so, a.version, "miopenGetVersion", missing);
    bind(so, a.create_tensor, "miopenCreateTensorDescriptor", missing);
    bind(so, a.destroy_tensor, "miopenDestroyTensorDescriptor", missing);
    bind(so, a.set_tensor, "miopenSetTensorDescriptor", missing);
    bind(so, a.create_conv, "miopenCreateConvolutionDescriptor", missing);
    bind(so, a.destroy_conv, "miopenDestroyConvolutionDescriptor", missing);
    bind(so, a.init_conv, "miopenInitConvolutionDescriptor", missing);
    bind(so, a.set_group_count, "miopenSetConvolutionGroupCount", missing);
    bind(so, a.output_dim, "miopenGetConvolutionForwardOutputDim", missing);
    bind(so, a.workspace_size, "miopenConvolutionForwardGetWorkSpaceSize", missing);
    bind(so, a.find_forward, "miopenFindConvolutionForwardAlgorithm", missing);
    bind(so, a.forward, "miopenConvolutionForward", missing);
    if (!missing.empty()) {
      l.error = "libMIOpen lacks entry points graphkiln uses: " + missing;
      return l;
    }
    size_t major = 0, minor = 0, patch = 0;
    if (a.version(&major, &minor, &patch) != kSuccess || major < 3) {
      l.error = "libMIOpen " + std::to_string(major) + "." + std::to_string(minor) +
                " is older than MIOpen 3 (ROCm 6)";
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
  gpu::check(hipGetDevice(&device), "MIOpen handle: hipGetDevice");
  std::lock_guard<std::mutex> lock(m);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  const Api* a = api();
  if (!a) throw std::runtime_error("MIOpen is not available");
  Handle h = nullptr;
  check(a->create(&h), "miopenCreate");
  handles[device] = h;
  return h;
}

Handle create_handle(hipStream_t stream) {
  const Api* a = api();
  if (!a) throw std::runtime_error("MIOpen is not available");
  Handle h = nullptr;
  check(a->create_with_stream(&h, stream), "miopenCreateWithStream");
  return h;
}

void destroy_handle(Handle h) {
  if (!h) return;
  if (const Api* a = api()) a->destroy(h);
}

void check(Status status, const char* what) {
  if (status == kSuccess) return;
  const Api* a = api();
  const std::string message = a ? a->error_string(status) : "MIOpen not loaded";
  throw std::runtime_error(std::string(what) + ": " + message + " (miopenStatus_t " +
                           std::to_string(status) + ")");
}

}  // namespace miopen
}  // namespace gpu
}  // namespace graphkiln

#endif  // GRAPHKILN_GPU_MIOPEN
