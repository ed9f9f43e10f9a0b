// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>

#include "core/build_info.hpp"
#include "core/pointwise_ops.hpp"
#include "python/executor_bindings.hpp"
#ifdef GRAPHKILN_WITH_GPU
#include "gpu/probe.hpp"
#endif  // GRAPHKILN_WITH_GPU

namespace py = pybind11;

namespace {

py::dict gpu_probe_info() {
#ifdef GRAPHKILN_WITH_GPU
  const graphkiln::GpuProbeInfo info = graphkiln::gk_gpu_probe_info();
  py::dict d;
  d["runtime_version"] = info.runtime_version;
  d["driver_version"] = info.driver_version;
  d["device_count"] = info.device_count;
  d["kernel_ran"] = info.kernel_ran;
  d["error"] = info.error;
  return d;
#else
  throw std::runtime_error("this graphkiln build has no GPU code (built without GPU_TARGETS)");
#endif  // GRAPHKILN_WITH_GPU
}

// src/core/pointwise_ops.def as data: (name, arity, ir_op, p0_attr, p1_attr, result,
// expression) per opcode, in opcode order; "_" where the table has none
py::list pointwise_ops() {
  py::list rows;
#define GK_POINTWISE(Name, arity, ir_op, p0_attr, p1_attr, result, ...) \
  rows.append(py::make_tuple(#Name, arity, #ir_op, #p0_attr, #p1_attr, #result, #__VA_ARGS__));
#include "core/pointwise_ops.def"
#undef GK_POINTWISE
  return rows;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "graphkiln's C++ core";
  m.def(
      "build_info",
      [] {
        const graphkiln::BuildInfo info = graphkiln::build_info();
        py::dict d;
        d["version"] = info.version;
        d["compiler"] = info.compiler;
        d["gpu_platform"] = info.gpu_platform;
        d["gpu_targets"] = info.gpu_targets;
        d["gpu_toolkit"] = info.gpu_toolkit;
        return d;
      },
      "What this build contains: version, compiler, GPU platform, the GPU ISAs compiled in and "
      "the HIP / CUDA version they were compiled with. Calls no GPU runtime.");
  m.def("pointwise_ops", &pointwise_ops,
        "The pointwise opcodes of src/core/pointwise_ops.def, in opcode order: (name, arity, "
        "IR op or '_', p0 attribute or '_', p1 attribute or '_', result kind, C expression)");
  graphkiln::bind_executor(m);
#ifdef GRAPHKILN_WITH_GPU
  graphkiln::bind_gpu_executor(m);
#endif  // GRAPHKILN_WITH_GPU
  m.def("gpu_probe_info", &gpu_probe_info,
        "GPU runtime and driver versions, device count, and whether the probe kernel ran. "
        "Initializes the GPU runtime: call graphkiln.check_gpu_compatibility() first.");
}
