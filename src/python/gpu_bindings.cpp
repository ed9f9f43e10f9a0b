// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// graphkiln._core.GpuExecutor (only in builds with GPU_TARGETS): builds the plan written by
// targets/gpu on the device and runs it. Inputs are numpy arrays (copied to the device) or
// device arrays read in place, through __cuda_array_interface__ or __dlpack__; outputs are
// numpy arrays. The GIL is released while the device works; one executor may run from several
// threads at once (its pool of execution contexts: gpu/executor.hpp), and this wrapper keeps
// no state of its own that a run writes.
// Device inputs name the stream they were written on: __cuda_array_interface__ v3's "stream",
// else the legacy default stream, which DLPack producers are asked for (__dlpack__(stream=)),
// so their writes are ordered before it; the run waits for that stream only.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/blas_lt_count.hpp"
#include "gpu/conv_miopen.hpp"
#include "gpu/cudnn_status.hpp"
#include "gpu/executor.hpp"
#include "gpu/jit.hpp"
#include "python/array_spec.hpp"
#include "python/device_array.hpp"
#include "python/dlpack.hpp"
#include "python/executor_bindings.hpp"

namespace py = pybind11;

namespace graphkiln {

namespace {

// A device input, what keeps it alive for the run and the stream it was written on
// (gpu::InputBuffer's encoding; 0: the legacy default stream).
struct DeviceInput {
  const void* data = nullptr;
  py::object owner;
  uintptr_t stream = 0;
};

std::string typestr(const py::dtype& d) {
  return std::string(1, d.byteorder() == '>' ? '>' : '<') + d.kind() + std::to_string(d.itemsize());
}

bool contiguous(const std::vector<int64_t>& shape, const int64_t* strides, int64_t itemsize,
                bool in_bytes) {
  if (!strides) return true;
  int64_t expect = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    const int64_t s = in_bytes ? strides[d] / itemsize : strides[d];
    if (shape[d] != 1 && s != expect) return false;
    expect *= shape[d];
  }
  return true;
}

class PyGpuExecutor {
 public:
  PyGpuExecutor(const py::list& steps, const py::list& constants, int64_t arena_bytes,
                const py::list& inputs, const py::list& outputs, bool builtin_blas, bool use_graphs,
                size_t max_contexts, int device) {
    std::vector<gpu::HostBuffer> host;
    for (const py::handle& c : constants) {
      auto array = py::array::ensure(c, py::array::c_style);
      if (!array) throw std::invalid_argument("a plan constant is not an array");
      constants_.push_back(array);
      host.push_back({array.data(), static_cast<size_t>(array.nbytes())});
    }
    std::vector<size_t> in_bytes, out_bytes;
    for (const py::handle& spec : inputs) {
      inputs_.push_back(array_spec(spec));
      in_bytes.push_back(static_cast<size_t>(inputs_.back().nbytes));
    }
    for (const py::handle& spec : outputs) {
      outputs_.push_back(array_spec(spec));
      out_bytes.push_back(static_cast<size_t>(outputs_.back().nbytes));
    }
    std::vector<StepSpec> specs;
    for (const py::handle& step : steps)
      specs.push_back(step_spec(py::reinterpret_borrow<py::dict>(step), 1));
    executor_ = std::make_unique<gpu::GpuExecutor>(std::move(specs), host, arena_bytes,
                                                   std::move(in_bytes), std::move(out_bytes),
                                                   builtin_blas, use_graphs, max_contexts, device);
  }

  // The run's input buffers; `held` keeps device arrays' owners alive for the run.
  std::vector<gpu::InputBuffer> gather_inputs(const py::list& arrays,
                                              std::vector<py::object>& held) const {
    if (arrays.size() != inputs_.size())
      throw std::invalid_argument("expected " + std::to_string(inputs_.size()) + " inputs, got " +
                                  std::to_string(arrays.size()));
    std::vector<gpu::InputBuffer> buffers;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      py::object item = py::reinterpret_borrow<py::object>(arrays[i]);
      DeviceInput dev = device_input(i, item);
      if (dev.data) {
        held.push_back(dev.owner);
        buffers.push_back({dev.data, true, dev.stream});
        continue;
      }
      py::array a = py::reinterpret_borrow<py::array>(item);
      check_host_array(i, inputs_[i], a);
      held.push_back(a);
      buffers.push_back({a.data(), false, 0});
    }
    return buffers;
  }

  // on_device: the outputs stay on the GPU, as DeviceArray objects (no copy to the host)
  py::list run(const py::list& arrays, bool on_device) {
    std::vector<py::object> held;
    const std::vector<gpu::InputBuffer> buffers = gather_inputs(arrays, held);
    std::vector<void*> out_ptrs;
    py::list results;
    if (on_device) {
      for (const ArraySpec& spec : outputs_) {
        auto a = std::make_shared<DeviceArray>(spec.dtype, spec.shape, executor_->device_id());
        out_ptrs.push_back(a->data());
        results.append(py::cast(a));
      }
    } else {
      results = new_outputs(outputs_, &out_ptrs);
    }
    {
      py::gil_scoped_release release;
      executor_->run(buffers, out_ptrs, on_device);
    }
    return results;
  }

  // The outputs written into the caller's device arrays (fixed buffers called again and
  // again, as onnxruntime's IOBinding): each one's shape, dtype and C-contiguity must match.
  void run_into(const py::list& arrays, const py::list& out_arrays) {
    if (out_arrays.size() != outputs_.size())
      throw std::invalid_argument("expected " + std::to_string(outputs_.size()) +
                                  " output arrays, got " + std::to_string(out_arrays.size()));
    std::vector<py::object> held;
    const std::vector<gpu::InputBuffer> buffers = gather_inputs(arrays, held);
    std::vector<void*> out_ptrs;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      py::object item = py::reinterpret_borrow<py::object>(out_arrays[i]);
      const std::string mismatch = "output array " + std::to_string(i) +
                                   " does not match the plan's output (dtype, shape " +
                                   "or C-contiguity)";
      DeviceInput dev = device_array(outputs_[i], mismatch, item);
      if (!dev.data)
        throw std::invalid_argument("output array " + std::to_string(i) +
                                    " is not a device array (__cuda_array_interface__ or "
                                    "__dlpack__ on the GPU)");
      held.push_back(dev.owner);
      out_ptrs.push_back(const_cast<void*>(dev.data));
    }
    py::gil_scoped_release release;
    executor_->run(buffers, out_ptrs, true);
  }

  std::vector<std::pair<std::string, double>> profile(const py::list& arrays) {
    std::vector<py::object> held;
    const std::vector<gpu::InputBuffer> buffers = gather_inputs(arrays, held);
    py::gil_scoped_release release;
    return executor_->profile(buffers);
  }

  int64_t arena_bytes() const { return executor_->arena_bytes(); }
  size_t num_steps() const { return executor_->num_steps(); }
  size_t workspace_bytes() const { return executor_->workspace_bytes(); }
  size_t device_bytes() const { return executor_->device_bytes(); }
  size_t bytes_per_context() const { return executor_->bytes_per_context(); }
  size_t contexts_created() const { return executor_->contexts_created(); }
  size_t max_contexts() const { return executor_->max_contexts(); }
  std::string device() const { return executor_->device_name(); }
  int device_id() const { return executor_->device_id(); }
  std::string blas() const { return executor_->blas_backend(); }
  std::string graph_state() const { return executor_->graph_state(); }

 private:
  DeviceInput device_input(size_t i, const py::object& item) const {
    return device_array(inputs_[i], plan_mismatch(i), item);
  }

  // __cuda_array_interface__ first, then __dlpack__; {nullptr} for host arrays. `mismatch`:
  // the error's start when the array's shape, dtype or layout differs from `spec`.
  static DeviceInput device_array(const ArraySpec& spec, const std::string& mismatch,
                                  const py::object& item) {
    if (py::isinstance<py::array>(item)) return {};
    auto check_shape = [&](const std::vector<int64_t>& shape) {
      if (shape != spec.shape) throw std::invalid_argument(mismatch);
    };
    if (py::hasattr(item, "__cuda_array_interface__")) {
      py::dict cai = item.attr("__cuda_array_interface__");
      check_shape(cai["shape"].cast<std::vector<int64_t>>());
      if (cai["typestr"].cast<std::string>() != typestr(spec.dtype))
        throw std::invalid_argument(mismatch + ": dtype " + cai["typestr"].cast<std::string>());
      if (cai.contains("strides") && !cai["strides"].is_none()) {
        auto strides = cai["strides"].cast<std::vector<int64_t>>();
        if (!contiguous(spec.shape, strides.data(), spec.dtype.itemsize(), true))
          throw std::invalid_argument(mismatch + ": not C-contiguous");
      }
      auto data = cai["data"].cast<std::pair<uintptr_t, bool>>();
      // v3: the stream the producer wrote on (None or absent: the legacy default stream)
      uintptr_t stream = 0;
      if (cai.contains("stream") && !cai["stream"].is_none())
        stream = cai["stream"].cast<uintptr_t>();
      return {reinterpret_cast<const void*>(data.first), item, stream};
    }
    if (py::hasattr(item, "__dlpack__")) {
      // A GPU tensor (by __dlpack_device__) is asked for stream=legacy: its producer then
      // orders its writes before the legacy default stream, which the run waits for. Host
      // tensors take no stream; producers without the stream argument get the plain call.
      bool on_gpu = false;
      if (py::hasattr(item, "__dlpack_device__")) {
        const auto where = item.attr("__dlpack_device__")().cast<std::pair<int, int>>();
        on_gpu = where.first == kDLCUDA || where.first == kDLROCM;
      }
      py::object capsule;
      if (on_gpu) {
        try {
          capsule = item.attr("__dlpack__")(py::arg("stream") = gpu::dlpack_legacy_stream());
        } catch (py::error_already_set& e) {
          if (!e.matches(PyExc_TypeError)) throw;
          capsule = item.attr("__dlpack__")();
        }
      } else {
        capsule = item.attr("__dlpack__")();
      }
      auto* managed =
          static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
      if (!managed) throw py::error_already_set();
      const DLTensor& t = managed->dl_tensor;
      if (t.device.device_type != kDLCUDA && t.device.device_type != kDLROCM)
        return {};  // a host tensor: numpy's path handles it
      std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
      check_shape(shape);
      const char kind = t.dtype.code == 0   ? 'i'
                        : t.dtype.code == 1 ? 'u'
                        : t.dtype.code == 2 ? 'f'
                                            : 'b';
      if (kind != spec.dtype.kind() || t.dtype.bits != spec.dtype.itemsize() * 8 ||
          t.dtype.lanes != 1)
        throw std::invalid_argument(mismatch + ": DLPack dtype differs");
      if (!contiguous(shape, t.strides, 1, false))
        throw std::invalid_argument(mismatch + ": not C-contiguous");
      // the capsule owns the tensor until its destructor runs the deleter; keep it for the run
      return {static_cast<const unsigned char*>(t.data) + t.byte_offset, capsule, 0};
    }
    return {};
  }

  std::vector<py::array> constants_;
  std::vector<ArraySpec> inputs_, outputs_;
  std::unique_ptr<gpu::GpuExecutor> executor_;
};

}  // namespace

void bind_gpu_executor(py::module_& m) {
  bind_device_array(m);
  py::class_<PyGpuExecutor>(m, "GpuExecutor",
                            "A GPU plan built into kernels: run(list of arrays) -> list of "
                            "numpy arrays; device inputs (__cuda_array_interface__, "
                            "__dlpack__) are read in place")
      .def(py::init<const py::list&, const py::list&, int64_t, const py::list&, const py::list&,
                    bool, bool, size_t, int>(),
           py::arg("steps"), py::arg("constants"), py::arg("arena_bytes"), py::arg("inputs"),
           py::arg("outputs"), py::arg("builtin_blas") = false, py::arg("use_graphs") = true,
           py::arg("max_contexts") = 1, py::arg("device") = -1,
           "max_contexts: how many runs may execute at once (execution contexts, each with its "
           "own arena, staging buffers, stream and graph; made on demand, the first here); "
           "device: the GPU it runs on (-1: the current one; one that does not exist is a "
           "ValueError naming those there are)")
      .def("run", &PyGpuExecutor::run, py::arg("inputs"), py::arg("on_device") = false,
           "on_device=True leaves the outputs on the GPU (DeviceArray objects)")
      .def("run_into", &PyGpuExecutor::run_into, py::arg("inputs"), py::arg("outputs"),
           "writes the outputs into the given device arrays (same shapes, dtypes, C order)")
      .def("profile", &PyGpuExecutor::profile, py::arg("inputs"),
           "One run kernel by kernel, timed on the device: [(step, ms)] in plan order")
      .def_property_readonly("arena_bytes", &PyGpuExecutor::arena_bytes)
      .def_property_readonly("num_steps", &PyGpuExecutor::num_steps)
      .def_property_readonly("workspace_bytes", &PyGpuExecutor::workspace_bytes)
      .def_property_readonly("device_bytes", &PyGpuExecutor::device_bytes,
                             "device bytes held: the constants once plus every context")
      .def_property_readonly("bytes_per_context", &PyGpuExecutor::bytes_per_context,
                             "device bytes of one execution context (all are alike)")
      .def_property_readonly("contexts_created", &PyGpuExecutor::contexts_created,
                             "execution contexts made so far (the first at construction)")
      .def_property_readonly("max_contexts", &PyGpuExecutor::max_contexts,
                             "the bound of the pool of contexts (lowered where making one "
                             "more ran out of memory)")
      .def_property_readonly("device", &PyGpuExecutor::device)
      .def_property_readonly("device_id", &PyGpuExecutor::device_id)
      .def_property_readonly("blas", &PyGpuExecutor::blas)
      .def_property_readonly("graph_state", &PyGpuExecutor::graph_state,
                             "'off', 'not captured yet', 'replaying', 'replaying in <k> of <n> "
                             "contexts', or 'kernel by kernel: <why the capture failed>'");
  m.def("gpu_kernels", &gpu::gpu_kernel_names, "Names of the GPU kernels compiled in");
  m.def("gpu_cudnn_status", &gpu::cudnn_status,
        "Whether Conv steps can use cuDNN here: 'cudnn' or 'off: <why>'");
  m.def("gpu_miopen_status", &gpu::miopen_status,
        "Whether Conv steps can use MIOpen here: 'miopen' or 'off: <why>'");
  m.def("gpu_lt_gemm_calls", &gpu::lt_gemm_calls,
        "How many GEMMs ran as one cuBLASLt call with their bias / ReLU epilogue so far");
  m.def("gpu_jit_status", &gpu::jit_status,
        "What compiles generated GPU kernels here: 'nvrtc 13.0, sm_90, cache <dir>' or "
        "'off: <why>'");
}

}  // namespace graphkiln
