// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#pragma once

#include <pybind11/pybind11.h>

namespace graphkiln {
void bind_executor(pybind11::module_& m);
}
