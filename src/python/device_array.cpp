// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// graphkiln._core.DeviceArray (device_array.hpp). The run that filled it synchronized its
// stream before returning, so the data is complete for every stream: the interfaces name no
// stream to wait for (__cuda_array_interface__'s "stream" is None; __dlpack__ accepts any).
#include "python/device_array.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "gpu/executor.hpp"
#include "python/dlpack.hpp"

namespace py = pybind11;

namespace graphkiln {
namespace {

std::string typestr(const py::dtype& d) {
  return std::string(1, d.byteorder() == '>' ? '>' : '<') + d.kind() + std::to_string(d.itemsize());
}

DLDataType dl_dtype(const py::dtype& d) {
  const char kind = d.kind();
  const uint8_t bits = static_cast<uint8_t>(d.itemsize() * 8);
  if (kind == 'f') return {kDLFloat, bits, 1};
  if (kind == 'i') return {kDLInt, bits, 1};
  if (kind == 'u') return {kDLUInt, bits, 1};
  if (kind == 'b') return {kDLBool, bits, 1};
  if (kind == 'V' && d.itemsize() == 2) return {kDLBfloat, 16, 1};  // ml_dtypes.bfloat16
  throw std::invalid_argument("DeviceArray: no DLPack type for dtype " + typestr(d));
}

int32_t dl_device_type() { return gpu::dlpack_device_type(); }

// What a DLPack capsule holds: the tensor, its shape, and a reference to the array (taken
// with the GIL, released by the deleter, which may run on any thread).
struct Exported {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  PyObject* owner = nullptr;
};

void delete_exported(DLManagedTensor* self) {
  auto* e = static_cast<Exported*>(self->manager_ctx);
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_XDECREF(e->owner);
  PyGILState_Release(gil);
  delete e;
}

void capsule_destructor(PyObject* capsule) {
  // a consumer renames the capsule "used_dltensor" and calls the deleter itself
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed && managed->deleter) managed->deleter(managed);
}

py::capsule to_dlpack(py::object self) {
  auto& a = self.cast<DeviceArray&>();
  auto e = std::make_unique<Exported>();
  e->shape = a.shape();
  e->owner = self.ptr();
  Py_INCREF(e->owner);
  DLTensor& t = e->managed.dl_tensor;
  t.data = a.data();
  t.device = {dl_device_type(), a.device()};
  t.ndim = static_cast<int32_t>(e->shape.size());
  t.dtype = dl_dtype(a.dtype());
  t.shape = e->shape.data();
  t.strides = nullptr;  // C-contiguous
  t.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = delete_exported;
  PyObject* capsule = PyCapsule_New(&e.release()->managed, "dltensor", capsule_destructor);
  if (!capsule) throw py::error_already_set();
  return py::reinterpret_steal<py::capsule>(capsule);
}

}  // namespace

DeviceArray::DeviceArray(py::dtype dtype, std::vector<int64_t> shape, int device)
    : dtype_(std::move(dtype)), shape_(std::move(shape)), device_(device) {
  size_t n = 1;
  for (int64_t d : shape_) n *= static_cast<size_t>(d);
  nbytes_ = n * static_cast<size_t>(dtype_.itemsize());
  data_ = gpu::device_alloc(nbytes_, device_);
}

DeviceArray::~DeviceArray() { gpu::device_free(data_, device_); }

void bind_device_array(py::module_& m) {
  py::class_<DeviceArray, std::shared_ptr<DeviceArray>>(
      m, "DeviceArray",
      "A run's output on the GPU (run(..., outputs='device')): read in place through "
      "__cuda_array_interface__ or __dlpack__ (CuPy, PyTorch, JAX); numpy() copies it to "
      "the host")
      .def_property_readonly("shape",
                             [](const DeviceArray& a) {
                               py::tuple t(a.shape().size());
                               for (size_t i = 0; i < a.shape().size(); ++i) t[i] = a.shape()[i];
                               return t;
                             })
      .def_property_readonly("dtype", &DeviceArray::dtype)
      .def_property_readonly("nbytes", &DeviceArray::nbytes)
      .def_property_readonly("device_id", &DeviceArray::device)
      .def_property_readonly("__cuda_array_interface__",
                             [](const DeviceArray& a) {
                               py::dict d;
                               py::tuple shape(a.shape().size());
                               for (size_t i = 0; i < a.shape().size(); ++i)
                                 shape[i] = a.shape()[i];
                               d["shape"] = shape;
                               d["typestr"] = typestr(a.dtype());
                               d["data"] =
                                   py::make_tuple(reinterpret_cast<uintptr_t>(a.data()), false);
                               d["strides"] = py::none();
                               d["stream"] = py::none();  // complete when the run returned
                               d["version"] = 3;
                               return d;
                             })
      .def(
          "__dlpack__",
          [](py::object self, py::object stream, py::object max_version, py::object dl_device,
             py::object copy) { return to_dlpack(self); },
          py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule of the data (no copy); any stream may read it")
      .def("__dlpack_device__",
           [](const DeviceArray& a) { return py::make_tuple(dl_device_type(), a.device()); })
      .def(
          "numpy",
          [](const DeviceArray& a) {
            py::array out(a.dtype(), a.shape());
            gpu::device_to_host(out.mutable_data(), a.data(), a.nbytes(), a.device());
            return out;
          },
          "A host copy (numpy array)")
      .def(
          "__array__",
          [](const DeviceArray& a, py::object dtype, py::object copy) {
            py::array out(a.dtype(), a.shape());
            gpu::device_to_host(out.mutable_data(), a.data(), a.nbytes(), a.device());
            if (!dtype.is_none()) return py::array(out.attr("astype")(dtype));
            return out;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("__repr__", [](const DeviceArray& a) {
        std::string s = "DeviceArray(shape=(";
        for (size_t i = 0; i < a.shape().size(); ++i)
          s += (i ? ", " : "") + std::to_string(a.shape()[i]);
        if (a.shape().size() == 1) s += ",";
        return s + "), dtype=" + py::str(a.dtype()).cast<std::string>() +
               ", device=" + std::to_string(a.device()) + ")";
      });
  m.def(
      "gpu_run_transfer_bytes",
      []() {
        const auto b = gpu::run_transfer_bytes();
        return py::make_tuple(b.first, b.second);
      },
      "(host to device, device to host): bytes GPU runs copied through the host for their "
      "inputs and outputs so far (device inputs and outputs count nothing)");
}

}  // namespace graphkiln
