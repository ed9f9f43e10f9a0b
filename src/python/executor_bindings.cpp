// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// graphkiln._core.Executor: builds the plan written by targets/native/lower.py and runs it
// with numpy arrays in and out, the GIL released while kernels run.
#include "python/executor_bindings.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "core/executor.hpp"
#include "python/array_spec.hpp"

namespace py = pybind11;

namespace graphkiln {

namespace {

TensorInfo tensor_info(const py::dict& d) {
  TensorInfo t;
  t.dtype = dtype_from_name(d["dtype"].cast<std::string>());
  t.dims = d["dims"].cast<std::vector<int64_t>>();
  t.strides = d["strides"].cast<std::vector<int64_t>>();
  if (t.strides.size() != t.dims.size()) throw std::invalid_argument("strides and dims differ");
  return t;
}

TensorRef tensor_ref(const py::dict& d) {
  auto ref = d["ref"].cast<std::tuple<int, int64_t, int64_t>>();
  TensorRef r;
  const int storage = std::get<0>(ref);
  if (storage < 0 || storage > 3) throw std::invalid_argument("bad storage kind");
  r.storage = static_cast<Storage>(storage);
  r.index = std::get<1>(ref);
  r.offset = std::get<2>(ref);
  return r;
}

}  // namespace

StepSpec step_spec(const py::dict& d, int num_threads) {
  StepSpec s;
  s.spec.kernel = d["kernel"].cast<std::string>();
  s.spec.name = d["name"].cast<std::string>();
  s.spec.num_threads = num_threads;
  s.spec.attrs = Attrs(d["attrs"].cast<std::map<std::string, AttrValue>>());
  // a tuned step's own thread count (graphkiln.tuning), else the plan's
  const int64_t tuned = s.spec.attrs.get_int("num_threads", 0);
  if (tuned > 0) s.spec.num_threads = static_cast<int>(tuned);
  for (const py::handle& item : d["inputs"].cast<py::list>()) {
    if (item.is_none()) {
      s.spec.inputs.emplace_back();
      s.spec.present.push_back(false);
      s.inputs.emplace_back();
      continue;
    }
    const py::dict t = py::reinterpret_borrow<py::dict>(item);
    s.spec.inputs.push_back(tensor_info(t));
    s.spec.present.push_back(true);
    s.inputs.push_back(tensor_ref(t));
  }
  for (const py::handle& item : d["outputs"].cast<py::list>()) {
    const py::dict t = py::reinterpret_borrow<py::dict>(item);
    s.spec.outputs.push_back(tensor_info(t));
    s.outputs.push_back(tensor_ref(t));
  }
  return s;
}

namespace {

class PyExecutor {
 public:
  PyExecutor(const py::list& steps, const py::list& constants, int64_t arena_bytes,
             const py::list& inputs, const py::list& outputs, int num_threads, int max_contexts,
             std::shared_ptr<ArenaPool> arenas, bool build_behind) {
    std::vector<const void*> pointers;
    StorageBytes sizes;
    sizes.checked = true;
    for (const py::handle& c : constants) {
      auto array = py::array::ensure(c, py::array::c_style);
      if (!array) throw std::invalid_argument("a plan constant is not an array");
      constants_.push_back(array);
      pointers.push_back(array.data());
      sizes.constants.push_back(static_cast<int64_t>(array.nbytes()));
    }
    for (const py::handle& spec : inputs) {
      inputs_.push_back(array_spec(spec));
      sizes.inputs.push_back(inputs_.back().nbytes);
    }
    for (const py::handle& spec : outputs) {
      outputs_.push_back(array_spec(spec));
      sizes.outputs.push_back(outputs_.back().nbytes);
    }
    std::vector<StepSpec> specs;
    for (const py::handle& step : steps) {
      const py::dict d = py::reinterpret_borrow<py::dict>(step);
      specs.push_back(step_spec(d, num_threads));
      if (d.contains("packed")) specs.back().saved_packing = saved_packing(d["packed"]);
    }
    executor_ = std::make_unique<Executor>(std::move(specs), std::move(pointers), arena_bytes,
                                           num_threads, sizes, max_contexts, std::move(arenas),
                                           build_behind);
  }

  // [(step index, [(layout, read-only uint8 view)])] for the steps whose kernels packed
  // constants; each view keeps `self` (the executor owning the bytes) alive
  py::list packed_constants(py::object self) const {
    wait_built();
    py::list out;
    for (size_t i = 0; i < executor_->num_steps(); ++i) {
      const auto& packed = executor_->packed_constants(i);
      if (packed.empty()) continue;
      py::list items;
      for (const PackedConstant& p : packed) {
        py::array_t<uint8_t> bytes({static_cast<py::ssize_t>(p.nbytes)}, {1},
                                   static_cast<const uint8_t*>(p.data), self);
        py::detail::array_proxy(bytes.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
        items.append(py::make_tuple(p.layout, bytes));
      }
      out.append(py::make_tuple(i, items));
    }
    return out;
  }
  int64_t reused_packings() const {
    wait_built();
    return executor_->reused_packings();
  }
  // A build behind the first run (build_behind) finishes without the GIL.
  void wait_built() const {
    py::gil_scoped_release release;
    executor_->wait_built();
  }
  bool built_behind() const { return executor_->built_behind(); }

  py::list run(const py::list& arrays) {
    if (arrays.size() != inputs_.size())
      throw std::invalid_argument("expected " + std::to_string(inputs_.size()) + " inputs, got " +
                                  std::to_string(arrays.size()));
    std::vector<py::array> held;
    std::vector<const void*> in_ptrs;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      py::array a = py::reinterpret_borrow<py::array>(arrays[i]);
      check_host_array(i, inputs_[i], a);
      held.push_back(a);
      in_ptrs.push_back(a.data());
    }
    std::vector<void*> out_ptrs;
    py::list results = new_outputs(outputs_, &out_ptrs);
    {
      py::gil_scoped_release release;
      executor_->run(in_ptrs, out_ptrs);
    }
    return results;
  }

  void set_profiling(bool on) { executor_->set_profiling(on); }
  py::list step_times() const {
    py::list out;
    for (const auto& t : executor_->step_times())
      out.append(py::make_tuple(t.kernel, t.name, t.total_ms, t.runs));
    return out;
  }

  int64_t arena_bytes() const { return executor_->arena_bytes(); }
  size_t num_steps() const { return executor_->num_steps(); }
  int num_threads() const { return executor_->num_threads(); }
  int max_contexts() const { return executor_->max_contexts(); }
  int contexts_created() const { return executor_->contexts_created(); }

 private:
  // A step's "packed" entry: [(layout text, 1-D uint8 array)], kept alive with the executor.
  std::vector<PackedConstant> saved_packing(const py::handle& items) {
    std::vector<PackedConstant> out;
    for (const py::handle& item : items.cast<py::list>()) {
      auto pair = item.cast<std::pair<std::string, py::object>>();
      auto bytes = py::array::ensure(pair.second, py::array::c_style);
      if (!bytes || !bytes.dtype().equal(py::dtype::of<uint8_t>()) || bytes.ndim() != 1)
        throw std::invalid_argument("a packed constant must be a 1-D uint8 array");
      constants_.push_back(bytes);
      out.push_back({pair.first, bytes.data(), static_cast<int64_t>(bytes.nbytes())});
    }
    return out;
  }

  std::vector<py::array> constants_;
  std::vector<ArraySpec> inputs_, outputs_;
  std::unique_ptr<Executor> executor_;
};

}  // namespace

void bind_executor(py::module_& m) {
  py::class_<ArenaPool, std::shared_ptr<ArenaPool>>(
      m, "ArenaPool",
      "Arenas for the runs of several plans (one program's shapes): a run takes an idle "
      "buffer large enough, or a new one, and gives it back after; at most max_free stay idle")
      .def(py::init<size_t>(), py::arg("max_free") = 4)
      .def_property_readonly("idle_bytes", &ArenaPool::idle_bytes)
      .def_property_readonly("allocated_bytes", &ArenaPool::allocated_bytes,
                             "bytes of every buffer not freed, idle or in a run")
      .def_property_readonly("allocations", &ArenaPool::allocations, "buffers allocated so far");
  py::class_<PyExecutor>(m, "Executor",
                         "A CPU plan built into kernels: run(list of arrays) -> list of arrays")
      .def(py::init<const py::list&, const py::list&, int64_t, const py::list&, const py::list&,
                    int, int, std::shared_ptr<ArenaPool>, bool>(),
           py::arg("steps"), py::arg("constants"), py::arg("arena_bytes"), py::arg("inputs"),
           py::arg("outputs"), py::arg("num_threads"), py::arg("max_contexts") = 1,
           py::arg("arena_pool") = nullptr, py::arg("build_behind") = false,
           "arena_pool: an ArenaPool the runs take their arena from (the plans of one program "
           "share one); None: the executor's own. build_behind: when a core beyond a run's "
           "is free, build the heavy kernels (oneDNN primitives) after the first on a "
           "worker thread while the first run goes on (a build error then surfaces in the "
           "run that reaches the step)")
      .def("run", &PyExecutor::run, py::arg("inputs"),
           "one run; safe from several threads at once (each takes an execution context)")
      .def("set_profiling", &PyExecutor::set_profiling, py::arg("on"),
           "time every step of the following runs")
      .def("step_times", &PyExecutor::step_times,
           "[(kernel, node name, total ms, runs)] per step, while profiling")
      .def(
          "packed_constants",
          [](py::object self) { return self.cast<const PyExecutor&>().packed_constants(self); },
          "[(step index, [(layout, uint8 array)])]: read-only views of the constants kernels "
          "packed at build time (oneDNN weights), to save with a program")
      .def_property_readonly("reused_packings", &PyExecutor::reused_packings,
                             "how many saved packed constants the kernels took as they are")
      .def_property_readonly("arena_bytes", &PyExecutor::arena_bytes)
      .def_property_readonly("num_steps", &PyExecutor::num_steps)
      .def_property_readonly("num_threads", &PyExecutor::num_threads)
      .def_property_readonly("max_contexts", &PyExecutor::max_contexts,
                             "how many runs may execute at once (execution contexts)")
      .def_property_readonly("contexts_created", &PyExecutor::contexts_created,
                             "execution contexts built so far")
      .def("wait_built", &PyExecutor::wait_built,
           "wait until a build behind the first run (build_behind) has finished")
      .def_property_readonly("built_behind", &PyExecutor::built_behind,
                             "whether the kernels were built behind the first run");
  m.def("set_core_budget", &set_core_budget, py::arg("cores"),
        "the cores concurrent cpu runs may hold at once, process-wide");
  m.def("core_budget", &core_budget, "the cores concurrent cpu runs may hold at once");
  m.def("cpu_kernels", &registered_kernels, "Names of the CPU kernels compiled in");
  m.def("max_threads", &max_threads, "OpenMP's thread count for the calling thread");
  // for graphkiln.tuning's device key: what oneDNN dispatches to, and its version
  m.def(
      "cpu_isa",
      [] {
        const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        const std::pair<dnnl_cpu_isa_t, const char*> names[] = {
            {dnnl_cpu_isa_avx512_core_amx_fp16, "avx512_core_amx_fp16"},
            {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
            {dnnl_cpu_isa_avx512_core_fp16, "avx512_core_fp16"},
            {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
            {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
            {dnnl_cpu_isa_avx512_core, "avx512_core"},
            {dnnl_cpu_isa_avx2_vnni_2, "avx2_vnni_2"},
            {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
            {dnnl_cpu_isa_avx2, "avx2"},
            {dnnl_cpu_isa_avx, "avx"},
            {dnnl_cpu_isa_sse41, "sse41"}};
        for (const auto& [value, name] : names)
          if (isa == value) return std::string(name);
        return "isa_" + std::to_string(static_cast<int>(isa));
      },
      "The CPU ISA oneDNN dispatches to (its effective ISA), e.g. avx512_core");
  m.def(
      "onednn_version",
      [] {
        const dnnl_version_t* v = dnnl_version();
        return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
               std::to_string(v->patch);
      },
      "The oneDNN library's version");
}

}  // namespace graphkiln
