// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/build_info.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "graphkiln's C++ core";
  m.def("build_info", [] {
    const graphkiln::BuildInfo info = graphkiln::build_info();
    py::dict d;
    d["version"] = info.version;
    d["compiler"] = info.compiler;
    d["gpu_platform"] = info.gpu_platform;
    d["gpu_targets"] = info.gpu_targets;
    return d;
  }, "What this build contains: version, compiler, GPU platform and the GPU ISAs compiled in.");
}
