// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// graphkiln._core.DeviceArray: a run's output left on the GPU (GpuExecutor.run(...,
// on_device=True)). It owns one device allocation and exposes it without a copy through
// __cuda_array_interface__ (v3) and __dlpack__ / __dlpack_device__, so CuPy, PyTorch and
// JAX read it in place; numpy() (or np.asarray) copies it to the host.
#pragma once

#include <pybind11/numpy.h>

#include <cstdint>
#include <vector>

namespace graphkiln {

class DeviceArray {
 public:
  DeviceArray(pybind11::dtype dtype, std::vector<int64_t> shape, int device);
  ~DeviceArray();
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  int device() const { return device_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  pybind11::dtype dtype() const { return dtype_; }

 private:
  pybind11::dtype dtype_;
  std::vector<int64_t> shape_;
  int device_;
  size_t nbytes_ = 0;
  void* data_ = nullptr;
};

void bind_device_array(pybind11::module_& m);

}  // namespace graphkiln
