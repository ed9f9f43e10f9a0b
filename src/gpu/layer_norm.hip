// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// LayerNormalization of float32 / float16 / bfloat16 rows (x, scale, bias and y of one type;
// float32 arithmetic, one rounding per output): y = (x - mean) / sqrt(var + epsilon) * scale
// + bias, with scale and bias of the row's length (the lowering expands smaller ones). One
// block a row; on NVIDIA one warp a row of up to 1024 elements, with 16-byte loads and stores
// where the length and pointers allow. With three outputs, the row means and inverse
// standard deviations (float32) go to outputs 1 and 2.
// attrs "rms" = 1: RMSNormalization (no mean is subtracted, no bias). Optional input 3, a
// residual of the data's shape: the rows normalized are data + residual (rounded to the type
// first, as a separate Add would store them).
#include "gpu/common.hpp"

#include <cstdint>

#include "gpu/block_reduce.hpp"
#include "gpu/half.hpp"
#include "gpu/kernel.hpp"
#include "gpu/kernels.hpp"

namespace graphkiln {
namespace gpu {

namespace {

// x[j], plus residual[j] when there is one, rounded to T as the separate Add would store it
template <typename T>
__device__ inline float input_at(const T* x, const T* residual, int64_t j) {
  const float v = load_float(x[j]);
  return residual ? load_float(store_float<T>(v + load_float(residual[j]))) : v;
}

template <typename T>
__global__ void layer_norm_rows(const T* x, const T* residual, const T* scale, const T* bias, T* y,
                                float* means, float* inv_stds, int64_t len, float epsilon,
                                int rms) {
  const T* row = x + blockIdx.x * len;
  const T* res = residual ? residual + blockIdx.x * len : nullptr;
  T* out = y + blockIdx.x * len;
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += input_at(row, res, j);
  const float mean = rms ? 0.f : block_reduce(sum, SumOp()) / static_cast<float>(len);
  float sq = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float d = input_at(row, res, j) - mean;
    sq += d * d;
  }
  const float inv = rsqrtf(block_reduce(sq, SumOp()) / static_cast<float>(len) + epsilon);
  if (means && threadIdx.x == 0) {
    means[blockIdx.x] = mean;
    inv_stds[blockIdx.x] = inv;
  }
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    out[j] = store_float<T>((input_at(row, res, j) - mean) * inv * load_float(scale[j]) +
                            (bias ? load_float(bias[j]) : 0.f));
}

#if defined(__CUDACC__) && !defined(__HIP__)
constexpr int kWarpRowMax = 1024, kWarpRowsPerBlock = 8;
// fewer rows than this: 2 warps a block, so small batches still spread over the SMs
constexpr int64_t kManyRows = 4096;

// one warp a row of len <= 32 * kPer: lane l holds elements l, l + 32, ...; blockDim.x / 32
// rows a block
template <typename T, int kPer>
__global__ void __launch_bounds__(kWarpRowsPerBlock * 32)
    layer_norm_warp_rows(const T* __restrict__ x, const T* __restrict__ residual,
                         const T* __restrict__ scale, const T* __restrict__ bias, T* __restrict__ y,
                         float* means, float* inv_stds, int64_t rows, int len, float epsilon,
                         int rms) {
  const int lane = threadIdx.x % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;  // whole warps leave together
  const T* row = x + r * len;
  const T* res = residual ? residual + r * len : nullptr;
  float v[kPer];
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int j = lane + 32 * e;
    v[e] = j < len ? input_at(row, res, j) : 0.f;
    sum += v[e];
  }
  const float mean = rms ? 0.f : warp_reduce(sum, SumOp()) / static_cast<float>(len);
  float sq = 0.f;
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int j = lane + 32 * e;
    const float d = j < len ? v[e] - mean : 0.f;
    sq += d * d;
  }
  const float inv = rsqrtf(warp_reduce(sq, SumOp()) / static_cast<float>(len) + epsilon);
  if (means && lane == 0) {
    means[r] = mean;
    inv_stds[r] = inv;
  }
  T* out = y + r * len;
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int j = lane + 32 * e;
    if (j < len)
      out[j] = store_float<T>((v[e] - mean) * inv * load_float(scale[j]) +
                              (bias ? load_float(bias[j]) : 0.f));
  }
}

// 16 bytes of T (4 floats or 8 half values) as floats, and back
template <typename T>
struct Pieces {
  static constexpr int kPer = 16 / sizeof(T);
  __device__ static void unpack(const uint4& raw, float (&out)[kPer]) {
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      if constexpr (sizeof(T) == 4) out[i] = __uint_as_float(w[i]);
      else out[i] = load_float(T{static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2)))});
    }
  }
  __device__ static uint4 pack(const float (&in)[kPer]) {
    uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      if constexpr (sizeof(T) == 4) w[i] = __float_as_uint(in[i]);
      else w[i / 2] |= uint32_t(store_float<T>(in[i]).bits) << (16 * (i % 2));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
};

// layer_norm_warp_rows with 16-byte loads and stores: lane l holds pieces l, l + 32, ... of
// kPer elements (len a multiple of kPer, every pointer 16-byte aligned); kPieces a lane
template <typename T, int kPieces>
__global__ void __launch_bounds__(kWarpRowsPerBlock * 32)
    layer_norm_warp_pieces(const T* __restrict__ x, const T* __restrict__ residual,
                           const T* __restrict__ scale, const T* __restrict__ bias,
                           T* __restrict__ y, float* means, float* inv_stds, int64_t rows, int len,
                           float epsilon, int rms) {
  using P = Pieces<T>;
  constexpr int kPer = P::kPer;
  const int lane = threadIdx.x % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;  // whole warps leave together
  const uint4* row = reinterpret_cast<const uint4*>(x + r * len);
  const uint4* res = reinterpret_cast<const uint4*>(residual ? residual + r * len : nullptr);
  const int pieces = len / kPer;
  float v[kPieces][kPer];
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < kPieces; ++e) {
    const int p = lane + 32 * e;
    if (p < pieces) {
      P::unpack(row[p], v[e]);
      if (res) {  // plus the residual, rounded to T as the separate Add would store it
        float add[kPer];
        P::unpack(res[p], add);
#pragma unroll
        for (int i = 0; i < kPer; ++i) v[e][i] = load_float(store_float<T>(v[e][i] + add[i]));
      }
    } else {
#pragma unroll
      for (int i = 0; i < kPer; ++i) v[e][i] = 0.f;
    }
#pragma unroll
    for (int i = 0; i < kPer; ++i) sum += v[e][i];
  }
  const float mean = rms ? 0.f : warp_reduce(sum, SumOp()) / static_cast<float>(len);
  float sq = 0.f;
#pragma unroll
  for (int e = 0; e < kPieces; ++e)
    if (lane + 32 * e < pieces)
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const float d = v[e][i] - mean;
        sq += d * d;
      }
  const float inv = rsqrtf(warp_reduce(sq, SumOp()) / static_cast<float>(len) + epsilon);
  if (means && lane == 0) {
    means[r] = mean;
    inv_stds[r] = inv;
  }
  uint4* out = reinterpret_cast<uint4*>(y + r * len);
  const uint4* scales = reinterpret_cast<const uint4*>(scale);
  const uint4* biases = reinterpret_cast<const uint4*>(bias);
#pragma unroll
  for (int e = 0; e < kPieces; ++e) {
    const int p = lane + 32 * e;
    if (p >= pieces) continue;
    float g[kPer], b[kPer] = {};
    P::unpack(scales[p], g);
    if (bias) P::unpack(biases[p], b);
#pragma unroll
    for (int i = 0; i < kPer; ++i) v[e][i] = (v[e][i] - mean) * inv * g[i] + b[i];
    out[p] = P::pack(v[e]);
  }
}
#endif  // NVIDIA

class LayerNorm : public Kernel {
 public:
  explicit LayerNorm(const KernelSpec& spec) {
    const TensorInfo& x = spec.inputs.at(0);
    dtype_ = x.dtype;
    if (!is_float_type(dtype_) || !x.is_contiguous() || spec.outputs.at(0).dtype != dtype_ ||
        spec.inputs.at(1).dtype != dtype_ || (spec.has_input(2) && spec.inputs[2].dtype != dtype_))
      spec_error(spec,
                 "needs contiguous float32, float16 or bfloat16 data, scale, bias and "
                 "result of one type");
    rows_ = spec.attrs.get_int("rows");
    len_ = spec.attrs.get_int("len");
    epsilon_ = static_cast<float>(spec.attrs.get_float("epsilon", 1e-5));
    if (spec.inputs.at(1).numel() != len_ || (spec.has_input(2) && spec.inputs[2].numel() != len_))
      spec_error(spec, "scale and bias must have the normalized size");
    has_residual_ = spec.has_input(3);
    if (has_residual_ && (spec.inputs[3].dtype != dtype_ || !spec.inputs[3].is_contiguous() ||
                          spec.inputs[3].numel() != rows_ * len_))
      spec_error(spec,
                 "input 3 (the residual added to the data) must be contiguous data of "
                 "the data's type and size");
    stats_ = spec.outputs.size() == 3;
    rms_ = static_cast<int>(spec.attrs.get_int("rms", 0));
    if (spec.outputs.size() != 1 && !stats_) spec_error(spec, "expects 1 or 3 outputs");
    if (stats_ && (spec.outputs[1].dtype != DType::f32 || spec.outputs[2].dtype != DType::f32))
      spec_error(spec, "the mean and inverse standard deviation outputs must be float32");
  }

  void run(const void* const* inputs, void* const* outputs, Context& ctx) const override {
    if (rows_ * len_ == 0) return;
    dispatch_float(dtype_, [&](auto t) {
      using T = decltype(t);
#if defined(__CUDACC__) && !defined(__HIP__)
      if (len_ <= kWarpRowMax && aligned16<T>(inputs, outputs)) {
        constexpr int64_t kRowPiece = 32 * Pieces<T>::kPer;  // one piece a lane
        if (len_ <= kRowPiece) launch_warp_rows<T, 1, true>(inputs, outputs, ctx);
        else if (len_ <= 2 * kRowPiece) launch_warp_rows<T, 2, true>(inputs, outputs, ctx);
        else if (len_ <= 3 * kRowPiece) launch_warp_rows<T, 3, true>(inputs, outputs, ctx);
        else if (len_ <= 4 * kRowPiece) launch_warp_rows<T, 4, true>(inputs, outputs, ctx);
        else if (len_ <= 6 * kRowPiece) launch_warp_rows<T, 6, true>(inputs, outputs, ctx);
        else launch_warp_rows<T, 8, true>(inputs, outputs, ctx);
        return;
      }
      if (len_ <= kWarpRowMax) {
        if (len_ <= 128) launch_warp_rows<T, 4>(inputs, outputs, ctx);
        else if (len_ <= 256) launch_warp_rows<T, 8>(inputs, outputs, ctx);
        else if (len_ <= 512) launch_warp_rows<T, 16>(inputs, outputs, ctx);
        else if (len_ <= 768) launch_warp_rows<T, 24>(inputs, outputs, ctx);
        else launch_warp_rows<T, 32>(inputs, outputs, ctx);
        return;
      }
#endif
      layer_norm_rows<T><<<static_cast<unsigned>(rows_), kRowThreads, 0, ctx.stream>>>(
          static_cast<const T*>(inputs[0]), static_cast<const T*>(residual(inputs)),
          static_cast<const T*>(inputs[1]), static_cast<const T*>(inputs[2]),
          static_cast<T*>(outputs[0]), stats_ ? static_cast<float*>(outputs[1]) : nullptr,
          stats_ ? static_cast<float*>(outputs[2]) : nullptr, len_, epsilon_, rms_);
    });
    check_launch("layer_norm_rows");
  }

 private:
  const void* residual(const void* const* inputs) const {
    return has_residual_ ? inputs[3] : nullptr;
  }

#if defined(__CUDACC__) && !defined(__HIP__)
  // 16-byte pieces fit: the row length a multiple of a piece, every pointer aligned to one
  template <typename T>
  bool aligned16(const void* const* inputs, void* const* outputs) const {
    auto ok = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    return len_ % Pieces<T>::kPer == 0 && ok(inputs[0]) && ok(inputs[1]) &&
           (!inputs[2] || ok(inputs[2])) && (!has_residual_ || ok(inputs[3])) && ok(outputs[0]);
  }

  // PIECES: kPer elements a lane, or (PIECES) 16-byte pieces a lane
  template <typename T, int kPer, bool PIECES = false>
  void launch_warp_rows(const void* const* inputs, void* const* outputs, Context& ctx) const {
    const int per_block = rows_ >= kManyRows ? kWarpRowsPerBlock : 2;
    const unsigned blocks = static_cast<unsigned>((rows_ + per_block - 1) / per_block);
    auto launch = [&](auto kernel) {
      kernel<<<blocks, per_block * 32, 0, ctx.stream>>>(
          static_cast<const T*>(inputs[0]), static_cast<const T*>(residual(inputs)),
          static_cast<const T*>(inputs[1]), static_cast<const T*>(inputs[2]),
          static_cast<T*>(outputs[0]), stats_ ? static_cast<float*>(outputs[1]) : nullptr,
          stats_ ? static_cast<float*>(outputs[2]) : nullptr, rows_, static_cast<int>(len_),
          epsilon_, rms_);
    };
    if constexpr (PIECES) launch(layer_norm_warp_pieces<T, kPer>);
    else launch(layer_norm_warp_rows<T, kPer>);
  }
#endif

  int64_t rows_ = 0, len_ = 0;
  float epsilon_ = 1e-5f;
  bool stats_ = false, has_residual_ = false;
  int rms_ = 0;
  DType dtype_ = DType::f32;
};

}  // namespace

std::unique_ptr<Kernel> make_layer_norm(const KernelSpec& spec) {
  return std::make_unique<LayerNorm>(spec);
}

}  // namespace gpu
}  // namespace graphkiln
