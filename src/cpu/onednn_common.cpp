// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
#include "cpu/onednn_common.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
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

namespace {

void append_dims(std::string& out, const char* name, const dnnl::memory::dims& dims) {
  out += name;
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + std::to_string(dims[i]);
  out += ';';
}

// The saved packing `step` holds for its next packed constant when it has `layout`, else null.
const PackedConstant* saved_packing(const StepPacking* step, const std::string& layout,
                                    size_t nbytes) {
  if (step == nullptr || step->packed.size() >= step->saved.size()) return nullptr;
  const PackedConstant& saved = step->saved[step->packed.size()];
  if (saved.data == nullptr || saved.layout != layout || saved.nbytes < 0 ||
      static_cast<size_t>(saved.nbytes) != nbytes)
    return nullptr;
  return &saved;
}

// The step's saved bytes of `layout` as 64-byte aligned data: in place when they are, else
// copied into the buffer `aligned_buffer` gives; counted as reused. Null when it has none.
const void* reuse_saved_packing(StepPacking* step, const std::string& layout, size_t nbytes,
                                const std::function<void*()>& aligned_buffer) {
  const PackedConstant* saved = saved_packing(step, layout, nbytes);
  if (saved == nullptr) return nullptr;
  const void* data = saved->data;
  if (reinterpret_cast<std::uintptr_t>(data) % 64 != 0) {  // e.g. loaded from a bytes object
    void* copy = aligned_buffer();
    std::memcpy(copy, data, nbytes);
    data = copy;
  }
  step->reused += 1;
  return data;
}

// Records `data` as the step's next packed constant (for saving the program).
void record_packing(StepPacking* step, const std::string& layout, const void* data, size_t nbytes) {
  if (step) step->packed.push_back({layout, data, static_cast<int64_t>(nbytes)});
}

}  // namespace

std::string onednn_layout_key(const dnnl::memory::desc& desc) {
  std::string out = "dt" + std::to_string(static_cast<int>(desc.get_data_type())) + ";fk" +
                    std::to_string(static_cast<int>(desc.get_format_kind())) + ";";
  append_dims(out, "d", desc.get_dims());
  append_dims(out, "p", desc.get_padded_dims());
  append_dims(out, "o", desc.get_padded_offsets());
  if (desc.get_format_kind() == dnnl::memory::format_kind::blocked) {
    append_dims(out, "s", desc.get_strides());
    append_dims(out, "b", desc.get_inner_blks());
    append_dims(out, "i", desc.get_inner_idxs());
  }
  out += "n" + std::to_string(desc.get_size());
  return out;
}

dnnl::memory onednn_reorder_constant(const dnnl::memory::desc& from, const void* src,
                                     const dnnl::memory::desc& to) {
  StepPacking* step = current_step_packing();
  const std::string layout = step ? onednn_layout_key(to) : std::string();
  dnnl::memory packed;
  auto owned = [&] {
    packed = dnnl::memory(to, onednn_engine());
    return packed.get_data_handle();
  };
  if (const void* saved = reuse_saved_packing(step, layout, to.get_size(), owned)) {
    if (!packed) packed = dnnl::memory(to, onednn_engine(), const_cast<void*>(saved));
  } else {
    dnnl::memory source(from, onednn_engine(), const_cast<void*>(src));
    owned();
    dnnl::stream stream(onednn_engine());
    dnnl::reorder(source, packed).execute(stream, source, packed);
    stream.wait();
  }
  record_packing(step, layout, packed.get_data_handle(), to.get_size());
  return packed;
}

const void* own_packed_constant(const std::string& layout, size_t nbytes,
                                const std::function<void(void*)>& fill,
                                std::shared_ptr<void>& owner) {
  StepPacking* step = current_step_packing();
  auto owned = [&] {
    void* buffer = std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
    if (buffer == nullptr) throw std::bad_alloc();
    owner = std::shared_ptr<void>(buffer, std::free);
    return buffer;
  };
  const void* data = reuse_saved_packing(step, layout, nbytes, owned);
  if (data == nullptr) {
    void* buffer = owned();
    fill(buffer);
    data = buffer;
  }
  record_packing(step, layout, data, nbytes);
  return data;
}

}  // namespace graphkiln
