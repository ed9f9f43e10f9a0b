// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// What the executors' bindings (executor_bindings.cpp, gpu_bindings.cpp) share about plan
// inputs and outputs: their specs as the Python plan gives them ((dtype, shape) pairs), the
// check a host array passes, and the fresh numpy arrays the outputs are written into.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace graphkiln {

struct ArraySpec {
  pybind11::dtype dtype;
  std::vector<int64_t> shape;
  int64_t nbytes = 0;
};

// (numpy dtype, shape) -> ArraySpec; a negative or overflowing size is refused.
inline ArraySpec array_spec(const pybind11::handle& spec) {
  auto pair = spec.cast<std::pair<pybind11::object, std::vector<int64_t>>>();
  ArraySpec s{pybind11::dtype::from_args(pair.first), pair.second, 0};
  int64_t n = static_cast<int64_t>(s.dtype.itemsize());
  for (int64_t d : s.shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      throw std::invalid_argument("an input or output shape is negative or too large");
  s.nbytes = n;
  return s;
}

inline std::string plan_mismatch(size_t i) {
  return "input " + std::to_string(i) +
         " does not match the plan (dtype, shape or "
         "C-contiguity)";
}

// Throws plan_mismatch(i) unless `a` is C-contiguous with the spec's dtype and shape.
inline void check_host_array(size_t i, const ArraySpec& spec, const pybind11::array& a) {
  bool ok = a.dtype().is(spec.dtype) || a.dtype().equal(spec.dtype);
  ok = ok && (a.flags() & pybind11::array::c_style) &&
       a.ndim() == static_cast<pybind11::ssize_t>(spec.shape.size());
  for (size_t d = 0; ok && d < spec.shape.size(); ++d) ok = a.shape(d) == spec.shape[d];
  if (!ok) throw std::invalid_argument(plan_mismatch(i));
}

// One new array per output spec; their data pointers go to *pointers.
inline pybind11::list new_outputs(const std::vector<ArraySpec>& specs,
                                  std::vector<void*>* pointers) {
  pybind11::list results;
  for (const ArraySpec& spec : specs) {
    pybind11::array a(spec.dtype, spec.shape);
    pointers->push_back(a.mutable_data());
    results.append(a);
  }
  return results;
}

}  // namespace graphkiln
