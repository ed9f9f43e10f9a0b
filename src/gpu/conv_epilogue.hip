// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The "Conv" step's shared parts (conv_epilogue.hpp): layouts, the epilogue and its kernel.
#include "gpu/common.hpp"

#include <string>
#include <vector>

#include "gpu/conv_epilogue.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"

namespace graphkiln {
namespace gpu {
namespace conv_step {

Layout layout_of(const TensorInfo& t) {
  if (t.rank() != 4) return Layout::kOther;
  if (t.is_contiguous()) return Layout::kNchw;
  const int64_t c = t.dims[1], h = t.dims[2], w = t.dims[3];
  const std::vector<int64_t> nhwc = {h * w * c, 1, w * c, c};
  for (int i = 0; i < 4; ++i)
    if (t.dims[i] != 1 && t.strides[i] != nhwc[i]) return Layout::kOther;
  return Layout::kNhwc;
}

Epilogue read_epilogue(const KernelSpec& spec) {
  Epilogue e;
  const std::string act = spec.attrs.get_str("activation", "");
  if (act == "relu") {
    e.relu = true;
  } else if (!act.empty()) {
    spec_error(spec, "activation '" + act + "' is not accepted (accepted: relu, or none)");
  }
  e.has_z = spec.has_input(3);
  if (e.has_z) {
    const TensorInfo& z = spec.inputs.at(3);
    const TensorInfo& y = spec.outputs.at(0);
    if (z.dtype != y.dtype || z.dims != y.dims || layout_of(z) != layout_of(y) ||
        layout_of(z) == Layout::kOther)
      spec_error(spec,
                 "the residual input (input 3) must have the output's shape, type and "
                 "layout (contiguous NCHW or packed NHWC)");
  }
  return e;
}

// y = act(y + bias[channel] + z), in float, one rounding (bias and z may be null)
// (plane = 1 for channels-last data: the channel is then i % channels)
template <typename T>
__global__ void conv_epilogue(T* y, const T* bias, const T* z, int64_t channels, int64_t plane,
                              int64_t total, bool relu) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = load_float(y[i]);
    if (bias) v += load_float(bias[(i / plane) % channels]);
    if (z) v += load_float(z[i]);
    if (relu && v < 0.f) v = 0.f;
    y[i] = store_float<T>(v);
  }
}

void launch_epilogue(DType dtype, void* y, const void* bias, const void* z, int64_t channels,
                     int64_t plane, int64_t total, bool relu, hipStream_t stream) {
  if (total == 0) return;
  dispatch_float(dtype, [&](auto t) {
    using T = decltype(t);
    conv_epilogue<T><<<blocks_for(total, 256), 256, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), static_cast<const T*>(z), channels, plane,
        total, relu);
  });
  check_launch("conv_epilogue");
}

}  // namespace conv_step
}  // namespace gpu
}  // namespace graphkiln
