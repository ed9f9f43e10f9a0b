// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "cpu/onednn_common.hpp"

#include <stdexcept>

namespace graphkiln {

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::data_type onednn_type(DType dtype) {
  using dt = dnnl::memory::data_type;
  switch (dtype) {
    case DType::f32: return dt::f32;
    case DType::f16: return dt::f16;
    case DType::bf16: return dt::bf16;
    case DType::i32: return dt::s32;
    case DType::i8: return dt::s8;
    case DType::u8: return dt::u8;
    default:
      throw std::invalid_argument(std::string("oneDNN has no element type ") + dtype_name(dtype));
  }
}

dnnl::memory::desc onednn_desc(DType dtype, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& strides) {
  dnnl::memory::dims d(dims.begin(), dims.end()), s(strides.begin(), strides.end());
  return dnnl::memory::desc(d, onednn_type(dtype), s);
}

dnnl::memory::desc onednn_desc(const TensorInfo& t) {
  return onednn_desc(t.dtype, t.dims, t.strides);
}

void onednn_execute(const dnnl::primitive& primitive,
                    const std::unordered_map<int, dnnl::memory>& args) {
  dnnl::stream stream(onednn_engine());
  primitive.execute(stream, args);
  stream.wait();
}

bool onednn_slow_impl(const std::string& impl) {
  return impl.find("ref") != std::string::npos || impl.find("gemm") != std::string::npos;
}

StagedMemory::StagedMemory(const dnnl::memory::desc& user, const dnnl::memory::desc& own,
                           bool output)
    : user_(user, onednn_engine(), DNNL_MEMORY_NONE), output_(output) {
  if (own == user) {
    arg_ = user_;
    return;
  }
  arg_ = dnnl::memory(own, onednn_engine());
  reorder_ = output ? dnnl::reorder(arg_, user_) : dnnl::reorder(user_, arg_);
}

dnnl::memory onednn_reorder_constant(const dnnl::memory::desc& from, const void* src,
                                     const dnnl::memory::desc& to) {
  dnnl::memory source(from, onednn_engine(), const_cast<void*>(src));
  dnnl::memory packed(to, onednn_engine());
  dnnl::stream stream(onednn_engine());
  dnnl::reorder(source, packed).execute(stream, source, packed);
  stream.wait();
  return packed;
}

}  // namespace graphkiln
