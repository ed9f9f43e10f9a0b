// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Runtime compilation of generated GPU source (see rtc.hpp): the runtime compiler found with
// dlopen (libnvrtc / libhiprtc, the few entry points declared here), the device's
// architecture, the on-disk cache, and module loading (cudaLibrary* on NVIDIA, hipModule* on
// AMD).
#include "gpu/common.hpp"
#include "gpu/rtc.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gpu/kernel.hpp"
#include "gpu/kernel_cache.hpp"

#if defined(__CUDACC__) && !defined(__HIP__)
#define GRAPHKILN_RTC_NVRTC 1
#endif

#ifndef GRAPHKILN_VERSION
#define GRAPHKILN_VERSION "unknown"
#endif

namespace graphkiln {
namespace gpu {

namespace {

// NVRTC and hipRTC share their API's shape: status codes, an opaque program handle.
using Program = void*;
struct Compiler {
  std::string error;  // why it is unavailable; empty when it loaded
  std::string name;   // "nvrtc 13.0"
  int (*create)(Program*, const char*, const char*, int, const char* const*,
                const char* const*) = nullptr;
  int (*compile)(Program, int, const char* const*) = nullptr;
  int (*log_size)(Program, size_t*) = nullptr;
  int (*log)(Program, char*) = nullptr;
  int (*code_size)(Program, size_t*) = nullptr;  // CUBIN or code object
  int (*code)(Program, char*) = nullptr;
  int (*ptx_size)(Program, size_t*) = nullptr;  // NVRTC only
  int (*ptx)(Program, char*) = nullptr;
  int (*destroy)(Program*) = nullptr;
  const char* (*error_string)(int) = nullptr;
  std::vector<int> archs;  // NVRTC: the compute capabilities it can compile for (90 = sm_90)
};

template <typename F>
bool bind(void* so, const char* symbol, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(so, symbol));
  return *fn != nullptr;
}

// The folder holding this module (for the pip layout: site-packages/graphkiln/_core*.so
// beside site-packages/nvidia/...).
std::string own_folder() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || !info.dli_fname) return "";
  const std::string path(info.dli_fname);
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

void* open_first(const std::vector<std::string>& names, std::string* tried) {
  for (const std::string& name : names) {
    if (void* so = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return so;
    *tried += (tried->empty() ? "" : ", ") + name;
  }
  return nullptr;
}

#if defined(GRAPHKILN_RTC_NVRTC)
// NVRTC opens libnvrtc-builtins.so.<major>.<minor> by name when it compiles. pip's
// nvidia-cuda-nvrtc keeps it beside libnvrtc, where the loader does not look unless
// LD_LIBRARY_PATH says so; loaded first from libnvrtc's own folder (RTLD_GLOBAL), NVRTC finds
// it already loaded. Where it is not there, NVRTC searches as it always does.
void preload_builtins(void* nvrtc_symbol, int major, int minor) {
  Dl_info info;
  if (dladdr(nvrtc_symbol, &info) == 0 || !info.dli_fname) return;
  const std::string path(info.dli_fname);
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return;
  const std::string builtins = path.substr(0, slash) + "/libnvrtc-builtins.so." +
                               std::to_string(major) + "." + std::to_string(minor);
  (void)dlopen(builtins.c_str(), RTLD_NOW | RTLD_GLOBAL);
}

Compiler load_compiler() {
  Compiler c;
  const std::string here = own_folder();
  std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12"};
  for (const char* sub :
       {"/../nvidia/cu13/lib/libnvrtc.so.13", "/../nvidia/cuda_nvrtc/lib/libnvrtc.so.13",
        "/../nvidia/cuda_nvrtc/lib/libnvrtc.so.12"})
    if (!here.empty()) names.push_back(here + sub);
  names.push_back("/usr/local/cuda/lib64/libnvrtc.so");
  names.push_back("libnvrtc.so");
  std::string tried;
  void* so = open_first(names, &tried);
  if (!so) {
    c.error = "NVRTC not found (tried " + tried + ")";
    return c;
  }
  int (*version)(int*, int*) = nullptr;
  int (*num_archs)(int*) = nullptr;
  int (*archs)(int*) = nullptr;
  const bool ok = bind(so, "nvrtcVersion", &version) && bind(so, "nvrtcCreateProgram", &c.create) &&
                  bind(so, "nvrtcCompileProgram", &c.compile) &&
                  bind(so, "nvrtcGetProgramLogSize", &c.log_size) &&
                  bind(so, "nvrtcGetProgramLog", &c.log) &&
                  bind(so, "nvrtcGetCUBINSize", &c.code_size) &&
                  bind(so, "nvrtcGetCUBIN", &c.code) && bind(so, "nvrtcGetPTXSize", &c.ptx_size) &&
                  bind(so, "nvrtcGetPTX", &c.ptx) && bind(so, "nvrtcDestroyProgram", &c.destroy) &&
                  bind(so, "nvrtcGetErrorString", &c.error_string) &&
                  bind(so, "nvrtcGetNumSupportedArchs", &num_archs) &&
                  bind(so, "nvrtcGetSupportedArchs", &archs);
  if (!ok) {
    c.error = "the NVRTC found lacks an entry point graphkiln uses";
    return c;
  }
  int major = 0, minor = 0, n = 0;
  version(&major, &minor);
  preload_builtins(reinterpret_cast<void*>(version), major, minor);
  if (num_archs(&n) == 0 && n > 0) {
    c.archs.resize(n);
    archs(c.archs.data());
  }
  c.name = "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
  return c;
}
#else
Compiler load_compiler() {
  Compiler c;
  std::string tried;
  // ROCm 5.3+ ships hipRTC as its own library; up to 5.2 it lives in libamdhip64
  void* so =
      open_first({"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so",
                  "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"},
                 &tried);
  if (!so) {
    c.error = "hipRTC not found (tried " + tried + ")";
    return c;
  }
  int (*version)(int*, int*) = nullptr;
  const bool ok =
      bind(so, "hiprtcCreateProgram", &c.create) && bind(so, "hiprtcCompileProgram", &c.compile) &&
      bind(so, "hiprtcGetProgramLogSize", &c.log_size) && bind(so, "hiprtcGetProgramLog", &c.log) &&
      bind(so, "hiprtcGetCodeSize", &c.code_size) && bind(so, "hiprtcGetCode", &c.code) &&
      bind(so, "hiprtcDestroyProgram", &c.destroy) &&
      bind(so, "hiprtcGetErrorString", &c.error_string);
  if (!ok) {
    c.error = "the HIP runtime found lacks hipRTC entry points";
    return c;
  }
  int major = 0, minor = 0;
  if (bind(so, "hiprtcVersion", &version)) version(&major, &minor);
  c.name = "hiprtc " + std::to_string(major) + "." + std::to_string(minor);
  return c;
}
#endif  // GRAPHKILN_RTC_NVRTC

const Compiler& compiler() {
  static const Compiler c = load_compiler();
  return c;
}

// How to compile for the current device: the options, and whether the result is PTX.
struct TargetChoice {
  std::string error;
  std::string arch;  // sm_90, compute_90 (PTX), gfx90a
  std::vector<std::string> options;
  bool ptx = false;
};

TargetChoice choose_target(const Compiler& c) {
  TargetChoice t;
  int device = 0;
  if (hipGetDevice(&device) != hipSuccess) {
    t.error = "no current GPU";
    return t;
  }
#if defined(GRAPHKILN_RTC_NVRTC)
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    t.error = "cannot read the device's compute capability";
    return t;
  }
  const int cc = major * 10 + minor;
  int best = 0;
  for (int a : c.archs)
    if (a == cc || (a < cc && a > best)) best = a;
  if (best == 0) {
    t.error = c.name + " cannot compile for sm_" + std::to_string(cc) + " or an older ISA";
    return t;
  }
  // SASS when NVRTC knows the device; else PTX of the newest ISA it knows (the driver
  // compiles that for the device when the module loads)
  t.ptx = best != cc;
  t.arch = (t.ptx ? "compute_" : "sm_") + std::to_string(best);
  t.options = {"--gpu-architecture=" + t.arch};
#else
  hipDeviceProp_t props;
  if (hipGetDeviceProperties(&props, device) != hipSuccess) {
    t.error = "cannot read the device's properties";
    return t;
  }
  std::string arch = props.gcnArchName;
  arch = arch.substr(0, arch.find(':'));  // gfx90a:sramecc+:xnack- -> gfx90a
  t.arch = arch;
  t.options = {"--offload-arch=" + arch, "-O3"};
  (void)c;
#endif
  return t;
}

std::string program_log(const Compiler& c, Program p) {
  size_t size = 0;
  if (c.log_size(p, &size) != 0 || size <= 1) return "";
  std::string log(size, '\0');
  if (c.log(p, &log[0]) != 0) return "";
  log.resize(size - 1);
  return log;
}

// Compiles `source`; "" and `binary` set, or the error.
std::string compile(const Compiler& c, const TargetChoice& t, const std::string& source,
                    std::string* binary) {
#if !defined(GRAPHKILN_RTC_NVRTC)
  // NVRTC compiles programs on several threads at once; older hipRTC releases are not
  // documented to, so their compiles take turns
  static std::mutex one_at_a_time;
  std::lock_guard<std::mutex> turn(one_at_a_time);
#endif
  Program p = nullptr;
  int status = c.create(&p, source.c_str(), "graphkiln_generated.cu", 0, nullptr, nullptr);
  if (status != 0) return std::string("creating the program: ") + c.error_string(status);
  std::vector<const char*> options;
  for (const std::string& o : t.options) options.push_back(o.c_str());
  status = c.compile(p, static_cast<int>(options.size()), options.data());
  std::string error;
  if (status != 0) {
    error = std::string("compiling: ") + c.error_string(status) + "\n" + program_log(c, p);
  } else {
    size_t size = 0;
    auto get_size = t.ptx ? c.ptx_size : c.code_size;
    auto get = t.ptx ? c.ptx : c.code;
    if (get_size(p, &size) != 0 || size == 0) {
      error = "the compiler returned no code";
    } else {
      binary->assign(size, '\0');
      if (get(p, &(*binary)[0]) != 0) error = "reading the compiled code failed";
    }
  }
  c.destroy(&p);
  return error;
}

#if defined(GRAPHKILN_RTC_NVRTC)
class LoadedModule : public JitModule {
 public:
  LoadedModule(const std::string& binary, const std::vector<std::string>& entries) {
    check(cudaLibraryLoadData(&library_, binary.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "loading a runtime-compiled module");
    for (const std::string& e : entries) {
      cudaKernel_t k = nullptr;
      check(cudaLibraryGetKernel(&k, library_, e.c_str()), "finding a runtime-compiled kernel");
      // loads it now (lazy loading would otherwise load it at its first launch, which may
      // be inside a graph capture)
      cudaFuncAttributes attrs;
      check(cudaFuncGetAttributes(&attrs, reinterpret_cast<const void*>(k)),
            "loading a runtime-compiled kernel");
      kernels_.push_back(k);
      entries_.push_back(e);
    }
  }
  ~LoadedModule() override {
    if (library_) (void)cudaLibraryUnload(library_);
  }
  void launch(size_t index, unsigned blocks, unsigned threads, void** args,
              hipStream_t stream) const override {
    check(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_.at(index)), dim3(blocks),
                           dim3(threads), args, 0, stream),
          entries_[index].c_str());
  }

 private:
  cudaLibrary_t library_ = nullptr;
  std::vector<cudaKernel_t> kernels_;
};
#else
class LoadedModule : public JitModule {
 public:
  LoadedModule(const std::string& binary, const std::vector<std::string>& entries) {
    check(hipModuleLoadData(&module_, binary.data()), "loading a runtime-compiled module");
    for (const std::string& e : entries) {
      hipFunction_t f = nullptr;
      check(hipModuleGetFunction(&f, module_, e.c_str()), "finding a runtime-compiled kernel");
      functions_.push_back(f);
      entries_.push_back(e);
    }
  }
  ~LoadedModule() override {
    if (module_) (void)hipModuleUnload(module_);
  }
  void launch(size_t index, unsigned blocks, unsigned threads, void** args,
              hipStream_t stream) const override {
    check(hipModuleLaunchKernel(functions_.at(index), blocks, 1, 1, threads, 1, 1, 0, stream, args,
                                nullptr),
          entries_[index].c_str());
  }

 private:
  hipModule_t module_ = nullptr;
  std::vector<hipFunction_t> functions_;
};
#endif  // GRAPHKILN_RTC_NVRTC

bool jit_disabled() {
  const char* v = std::getenv("GRAPHKILN_GPU_JIT");
  return v && std::string(v) == "0";
}

std::mutex mutex;
std::map<std::string, std::weak_ptr<const JitModule>>& loaded() {
  static std::map<std::string, std::weak_ptr<const JitModule>> m;
  return m;
}

// Compiles started ahead (jit_prefetch): key -> the code, "" when it failed (the compile is
// then repeated by jit_module, which reports the error).
std::map<std::string, std::shared_future<std::string>>& pending() {
  static std::map<std::string, std::shared_future<std::string>> m;
  return m;
}

// The workers of the prefetches; their futures wait for them at exit.
std::vector<std::future<void>>& workers() {
  static std::vector<std::future<void>> w;
  return w;
}

std::string cache_key(const Compiler& c, const TargetChoice& target, const std::string& source,
                      const std::vector<std::string>& entries) {
  std::string key = std::string("graphkiln ") + GRAPHKILN_VERSION + "\n" + c.name + "\n";
  for (const std::string& o : target.options) key += o + "\n";
  for (const std::string& e : entries) key += e + "\n";
  return key + source;
}

// The compiler and target, or false with `why_not` set.
bool usable(const Compiler** c, TargetChoice* target, std::string* why_not) {
  if (jit_disabled()) {
    *why_not = "GRAPHKILN_GPU_JIT=0";
    return false;
  }
  *c = &compiler();
  if (!(*c)->error.empty()) {
    *why_not = (*c)->error;
    return false;
  }
  *target = choose_target(**c);
  if (!target->error.empty()) {
    *why_not = target->error;
    return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<const JitModule> jit_module(const std::string& source,
                                            const std::vector<std::string>& entries,
                                            std::string* why_not) {
  const Compiler* c = nullptr;
  TargetChoice target;
  if (!usable(&c, &target, why_not)) return nullptr;
  const std::string key = cache_key(*c, target, source, entries);
  // a module is loaded on the current device: one per device (the disk cache is by code)
  int device = 0;
  (void)hipGetDevice(&device);
  const std::string loaded_key = key + "\n@device " + std::to_string(device);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded().find(loaded_key);
  if (found != loaded().end())
    if (auto module = found->second.lock()) return module;
  const KernelCache cache(kernel_cache_dir());
  std::string binary;
  std::shared_ptr<const JitModule> module;
  auto ahead = pending().find(key);
  if (ahead != pending().end()) {
    binary = ahead->second.get();  // waits for the compile started ahead
    pending().erase(ahead);
  }
  if (!binary.empty() || cache.load(key, &binary)) {
    try {
      module = std::make_shared<LoadedModule>(binary, entries);
    } catch (const std::exception&) {
      (void)hipGetLastError();  // code the runtime refuses (a damaged cache file): compile again
    }
  }
  if (!module) {
    const std::string error = compile(*c, target, source, &binary);
    if (!error.empty()) {
      *why_not = c->name + " for " + target.arch + ": " + error;
      return nullptr;
    }
    try {
      module = std::make_shared<LoadedModule>(binary, entries);
    } catch (const std::exception& e) {
      (void)hipGetLastError();
      *why_not = e.what();
      return nullptr;
    }
    cache.store(key, binary);
  }
  loaded()[loaded_key] = module;
  return module;
}

void jit_prefetch(const std::vector<std::string>& sources,
                  const std::vector<std::vector<std::string>>& entries) {
  const Compiler* c = nullptr;
  TargetChoice target;
  std::string why_not;
  if (!usable(&c, &target, &why_not) || sources.size() != entries.size()) return;
  const KernelCache cache(kernel_cache_dir());
  struct Job {
    std::string key, source;
    std::promise<std::string> done;
  };
  auto jobs = std::make_shared<std::vector<Job>>();
  {
    std::lock_guard<std::mutex> lock(mutex);
    std::string ignored;
    for (size_t i = 0; i < sources.size(); ++i) {
      std::string key = cache_key(*c, target, sources[i], entries[i]);
      int device = 0;
      (void)hipGetDevice(&device);
      auto found = loaded().find(key + "\n@device " + std::to_string(device));
      if ((found != loaded().end() && !found->second.expired()) || pending().count(key) ||
          cache.load(key, &ignored))
        continue;
      jobs->push_back(Job{key, sources[i], {}});
      pending()[key] = jobs->back().done.get_future().share();
    }
  }
  if (jobs->empty()) return;
  // parallel compiles (NVRTC; hipRTC takes turns, see compile())
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t n_workers = std::min<size_t>({jobs->size(), cores, 16});
  auto next = std::make_shared<std::atomic<size_t>>(0);
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t w = 0; w < n_workers; ++w)
    workers().push_back(std::async(std::launch::async, [jobs, next, c, target, cache] {
      for (size_t i = next->fetch_add(1); i < jobs->size(); i = next->fetch_add(1)) {
        Job& job = (*jobs)[i];
        std::string binary;
        if (compile(*c, target, job.source, &binary).empty()) cache.store(job.key, binary);
        else binary.clear();
        job.done.set_value(binary);
      }
    }));
}

std::string jit_status() {
  if (jit_disabled()) return "off: GRAPHKILN_GPU_JIT=0";
  const Compiler& c = compiler();
  if (!c.error.empty()) return "off: " + c.error;
  const TargetChoice t = choose_target(c);
  if (!t.error.empty()) return "off: " + t.error;
  const std::string dir = kernel_cache_dir();
  return c.name + ", " + t.arch + (t.ptx ? " ptx" : "") + ", cache " +
         (dir.empty() ? std::string("off") : dir);
}

}  // namespace gpu
}  // namespace graphkiln
