// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// DLPack's C ABI (stable since v0.5), declared here to need no header: the device inputs the
// bindings read (gpu_bindings.cpp) and the device outputs they hand out (device_array.cpp).
#pragma once

#include <cstdint>

namespace graphkiln {

struct DLDevice {
  int32_t device_type, device_id;
};
struct DLDataType {
  uint8_t code, bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
constexpr int32_t kDLCUDA = 2, kDLROCM = 10;
// DLDataType codes
constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6;

}  // namespace graphkiln
