// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Copy / StridedCopy: dst[dst_offset + i . dst_strides] = src[src_offset + i . src_strides]
// for every index i of `dims`. The lowering expresses Transpose, Slice, Concat, Split and
// Expand (stride 0) with it; without those attributes it is a plain copy between the input
// and output layouts. Dims that are adjacent in both layouts are merged first; a copy whose
// source and destination are contiguous along different dims (NCHW <-> NHWC, a Transpose of
// the last dim) goes through 32 x 32 tiles in shared memory, so that both the reads and the
// writes of a warp are contiguous; every other copy maps each element's offset.
#include "gpu/common.hpp"

#include <cstdint>

#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

template <typename T>
__global__ void strided_copy(const T* src, T* dst, Strides s, Strides d, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[map_offset(d, i)] = src[map_offset(s, i)];
}

constexpr int kTile = 32, kTileRows = 8;  // a block: 32 x 8 threads over a 32 x 32 tile

// dst = src for a copy contiguous in src along dim a (size na) and in dst along dim b (nb),
// the other dims (`rest`, n_rest index combinations, with their src / dst strides) outer:
// tile (ta, tb) of rest index r is read along a and written along b.
template <typename T>
__global__ void tiled_transpose(const T* src, T* dst, Strides rest_src, Strides rest_dst,
                                int64_t n_rest, int64_t na, int64_t nb, int64_t src_b,
                                int64_t dst_a) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t tiles_a = (na + kTile - 1) / kTile, tiles_b = (nb + kTile - 1) / kTile;
  const int64_t tiles = n_rest * tiles_a * tiles_b;
  const int x = threadIdx.x, y = threadIdx.y;
  for (int64_t id = blockIdx.x; id < tiles; id += gridDim.x) {
    const int64_t r = id / (tiles_a * tiles_b), in_plane = id % (tiles_a * tiles_b);
    const int64_t a0 = (in_plane % tiles_a) * kTile, b0 = (in_plane / tiles_a) * kTile;
    const T* from = src + map_offset(rest_src, r);
    T* to = dst + map_offset(rest_dst, r);
    for (int j = y; j < kTile; j += kTileRows)  // tile[b][a], lanes along a
      if (a0 + x < na && b0 + j < nb) tile[j][x] = from[a0 + x + (b0 + j) * src_b];
    __syncthreads();
    for (int j = y; j < kTile; j += kTileRows)  // lanes along b
      if (b0 + x < nb && a0 + j < na) to[b0 + x + (a0 + j) * dst_a] = tile[x][j];
    __syncthreads();
  }
}

template <typename T>
__global__ void linear_copy(const T* src, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

bool dense(const Strides& s) {
  int64_t expect = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    if (s.dims[d] != 1 && s.strides[d] != expect) return false;
    expect *= s.dims[d];
  }
  return true;
}

class StridedCopy : public Kernel {
 public:
  explicit StridedCopy(const KernelSpec& spec) {
    const TensorInfo& in = spec.inputs.at(0);
    const TensorInfo& out = spec.outputs.at(0);
    if (dtype_size(in.dtype) != dtype_size(out.dtype)) spec_error(spec, "element sizes differ");
    elem_ = dtype_size(in.dtype);
    std::vector<int64_t> dims = spec.attrs.get_ints("dims", out.dims);
    std::vector<int64_t> ss = spec.attrs.get_ints("src_strides", in.strides);
    std::vector<int64_t> ds = spec.attrs.get_ints("dst_strides", out.strides);
    src_offset_ = spec.attrs.get_int("src_offset", 0);
    dst_offset_ = spec.attrs.get_int("dst_offset", 0);
    if (ss.size() != dims.size() || ds.size() != dims.size())
      spec_error(spec, "dims and strides differ in rank");
    // drop size-1 dims and merge a dim into the one before where both layouts allow, then
    // check the rank fits
    n_ = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      n_ *= dims[i];
      if (dims[i] == 1) continue;
      const int last = src_.rank - 1;
      if (last >= 0 && src_.strides[last] == ss[i] * dims[i] &&
          dst_.strides[last] == ds[i] * dims[i]) {
        src_.dims[last] = dst_.dims[last] = src_.dims[last] * dims[i];
        src_.strides[last] = ss[i];
        dst_.strides[last] = ds[i];
        continue;
      }
      if (src_.rank == kMaxRank) spec_error(spec, "more than 8 non-unit dims");
      src_.dims[src_.rank] = dst_.dims[dst_.rank] = dims[i];
      src_.strides[src_.rank++] = ss[i];
      dst_.strides[dst_.rank++] = ds[i];
    }
    linear_ = dense(src_) && dense(dst_);
    if (!linear_) plan_tiles();
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    const unsigned char* src = static_cast<const unsigned char*>(inputs[0]) + src_offset_ * elem_;
    unsigned char* dst = static_cast<unsigned char*>(outputs[0]) + dst_offset_ * elem_;
    if (linear_) {
      check(hipMemcpyAsync(dst, src, n_ * elem_, hipMemcpyDeviceToDevice, ctx.stream),
            "device copy");
      return;
    }
    if (tiled_) {
      switch (elem_) {
        case 1: launch_tiled<uint8_t>(src, dst, ctx); break;
        case 2: launch_tiled<uint16_t>(src, dst, ctx); break;
        case 4: launch_tiled<uint32_t>(src, dst, ctx); break;
        default: launch_tiled<uint64_t>(src, dst, ctx); break;
      }
      check_launch("tiled_transpose");
      return;
    }
    const unsigned blocks = blocks_for(n_, 256);
    switch (elem_) {
      case 1: launch<uint8_t>(src, dst, blocks, ctx); break;
      case 2: launch<uint16_t>(src, dst, blocks, ctx); break;
      case 4: launch<uint32_t>(src, dst, blocks, ctx); break;
      default: launch<uint64_t>(src, dst, blocks, ctx); break;
    }
    check_launch("strided_copy");
  }

 private:
  template <typename T>
  void launch(const unsigned char* src, unsigned char* dst, unsigned blocks, Context& ctx) const {
    strided_copy<T><<<blocks, 256, 0, ctx.stream>>>(reinterpret_cast<const T*>(src),
                                                    reinterpret_cast<T*>(dst), src_, dst_, n_);
  }
  template <typename T>
  void launch_tiled(const unsigned char* src, unsigned char* dst, Context& ctx) const {
    const int64_t tiles = n_rest_ * ((na_ + kTile - 1) / kTile) * ((nb_ + kTile - 1) / kTile);
    const unsigned blocks = static_cast<unsigned>(tiles < (1 << 20) ? tiles : (1 << 20));
    tiled_transpose<T><<<blocks, dim3(kTile, kTileRows), 0, ctx.stream>>>(
        reinterpret_cast<const T*>(src), reinterpret_cast<T*>(dst), rest_src_, rest_dst_, n_rest_,
        na_, nb_, src_b_, dst_a_);
  }

  // The tiled path where src is contiguous along one dim a and dst along another dim b, both
  // at least 8 long (shorter ones would leave most of a tile idle)
  void plan_tiles() {
    int a = -1, b = -1;
    for (int i = 0; i < src_.rank; ++i) {
      if (src_.strides[i] == 1 && a < 0) a = i;
      if (dst_.strides[i] == 1 && b < 0) b = i;
    }
    if (a < 0 || b < 0 || a == b || src_.dims[a] < 8 || src_.dims[b] < 8) return;
    tiled_ = true;
    na_ = src_.dims[a];
    nb_ = src_.dims[b];
    src_b_ = src_.strides[b];
    dst_a_ = dst_.strides[a];
    n_rest_ = 1;
    for (int i = 0; i < src_.rank; ++i) {
      if (i == a || i == b) continue;
      rest_src_.dims[rest_src_.rank] = rest_dst_.dims[rest_dst_.rank] = src_.dims[i];
      rest_src_.strides[rest_src_.rank++] = src_.strides[i];
      rest_dst_.strides[rest_dst_.rank++] = dst_.strides[i];
      n_rest_ *= src_.dims[i];
    }
  }

  size_t elem_ = 4;
  int64_t n_ = 0, src_offset_ = 0, dst_offset_ = 0;
  Strides src_, dst_;
  bool linear_ = false;
  // the tiled path: dims a (src contiguous) and b (dst contiguous), the rest outer
  bool tiled_ = false;
  int64_t na_ = 0, nb_ = 0, src_b_ = 0, dst_a_ = 0, n_rest_ = 0;
  Strides rest_src_, rest_dst_;
};

// Trilu: x over [batch, rows, cols], elements outside the kept triangle (j - i >= k for
// upper, j - i <= k for lower) zeroed.
template <typename T>
__global__ void trilu(const T* x, T* y, int64_t rows, int64_t cols, int64_t k, int upper,
                      int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % cols, r = (i / cols) % rows;
    const bool keep = upper ? c - r >= k : c - r <= k;
    y[i] = keep ? x[i] : T(0);
  }
}

class Trilu : public Kernel {
 public:
  explicit Trilu(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    if (x.rank() < 2 || !x.is_contiguous()) spec_error(spec, "needs contiguous data of rank >= 2");
    rows_ = x.dims[x.rank() - 2];
    cols_ = x.dims[x.rank() - 1];
    k_ = spec.attrs.get_int("k", 0);
    upper_ = static_cast<int>(spec.attrs.get_int("upper", 1));
    n_ = x.numel();
    elem_ = dtype_size(x.dtype);
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (n_ == 0) return;
    const unsigned blocks = blocks_for(n_, 256);
    switch (elem_) {
      case 1:
        trilu<uint8_t><<<blocks, 256, 0, ctx.stream>>>(static_cast<const uint8_t*>(inputs[0]),
                                                       static_cast<uint8_t*>(outputs[0]), rows_,
                                                       cols_, k_, upper_, n_);
        break;
      case 2:
        trilu<uint16_t><<<blocks, 256, 0, ctx.stream>>>(static_cast<const uint16_t*>(inputs[0]),
                                                        static_cast<uint16_t*>(outputs[0]), rows_,
                                                        cols_, k_, upper_, n_);
        break;
      case 4:
        trilu<uint32_t><<<blocks, 256, 0, ctx.stream>>>(static_cast<const uint32_t*>(inputs[0]),
                                                        static_cast<uint32_t*>(outputs[0]), rows_,
                                                        cols_, k_, upper_, n_);
        break;
      default:
        trilu<uint64_t><<<blocks, 256, 0, ctx.stream>>>(static_cast<const uint64_t*>(inputs[0]),
                                                        static_cast<uint64_t*>(outputs[0]), rows_,
                                                        cols_, k_, upper_, n_);
        break;
    }
    check_launch("trilu");
  }

 private:
  int64_t rows_ = 0, cols_ = 0, k_ = 0, n_ = 0;
  int upper_ = 1;
  size_t elem_ = 4;
};

}  // namespace

std::unique_ptr<Kernel> make_trilu(const KernelSpec& spec) { return std::make_unique<Trilu>(spec); }

std::unique_ptr<Kernel> make_strided_copy(const KernelSpec& spec) {
  return std::make_unique<StridedCopy>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
