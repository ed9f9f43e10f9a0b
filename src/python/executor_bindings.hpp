// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#pragma once

#include <pybind11/pybind11.h>

#include "core/executor.hpp"

namespace graphkiln {
void bind_executor(pybind11::module_& m);
// One step of plan.executor_steps() (targets/native/plan.py) as the executors take it.
StepSpec step_spec(const pybind11::dict& d, int num_threads);
#ifdef GRAPHKILN_WITH_GPU
void bind_gpu_executor(pybind11::module_& m);  // gpu_bindings.cpp
#endif  // GRAPHKILN_WITH_GPU
}  // namespace graphkiln
