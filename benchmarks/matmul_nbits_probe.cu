// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The MatMulNBits register kernel (src/gpu/matmul_nbits_kernel.hpp, the code the gpu target
// runs) timed against the memory it must read, for each block shape (rows of W per block,
// warps per block), on Llama-7B-class GEMV shapes. Standalone CUDA (no Python, no graphkiln
// build), so that a device call can compare block shapes in seconds:
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -x cu -I src benchmarks/matmul_nbits_probe.cu -o /tmp/probe
//   /tmp/probe [runs] [case] [config]   (case / config: indexes, to time or profile one)
//
// Per case the weights (packed codes + float32 scales) are allocated in enough copies to
// exceed 512 MiB and the timed launches cycle through them, so no launch finds its weights in
// L2 (50 MiB on the H200); launches go back to back on one stream between two events (the
// per-launch time, without the host's launch gaps). "% of copy": the bytes the kernel must
// move (codes, scales, A, Y) over its time, against cudaMemcpy's device-to-device rate (read +
// write) measured in the same run. Each case is first checked against a host computation in
// double (max error relative to max |y|).
//
// The read floor: per case, the fastest of a few launch shapes of a kernel that only reads the
// same codes and scales (16-byte loads, several in flight per thread, an XOR kept) under the
// same timing. It is what any kernel reading those bytes pays at that size, launch and ramp
// included; "% of floor" is the GEMV's time against it.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gpu/matmul_nbits_kernel.hpp"

using graphkiln::gpu::nbits::matmul_nbits;
using graphkiln::gpu::nbits::Shape;
using graphkiln::gpu::nbits::Zero;

#define CHECK(x) \
  do { \
    cudaError_t e = (x); \
    if (e != cudaSuccess) { \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      std::exit(1); \
    } \
  } while (0)

// The "v2" variant, timed beside the gpu target's kernel (not used by it): fewer ALU
// instructions per code. A code becomes m = 1 + code / 2^BITS exactly (the code shifted to the
// top of a float's mantissa, OR 1.0f's bits: two instructions, no subtraction), and a chunk's
// sum_i (code_i - z) a_i = 2^BITS (sum_i m_i a_i) - (2^BITS + z) sum_i a_i, with sum_i a_i
// computed once per chunk and shared by the block's rows: per code a shift, a LOP3 and an FMA.
namespace v2 {

using graphkiln::gpu::nbits::kChunk;
using graphkiln::gpu::nbits::load_a;
using graphkiln::gpu::nbits::load_words;

template <int BITS>
__device__ inline void chunk_m(const uint32_t* words, int c, float m[kChunk]) {
  if constexpr (BITS == 4) {
    const uint32_t word = words[c];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const int shift = 19 - 4 * i;  // nibble i to bits 19..22
      const uint32_t v = shift >= 0 ? word << shift : word >> -shift;
      m[i] = __uint_as_float((v & 0x00780000u) | 0x3F800000u);
    }
  } else {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t word = words[2 * c + h];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int shift = 15 - 8 * i;  // byte i to bits 15..22
        const uint32_t v = shift >= 0 ? word << shift : word >> -shift;
        m[4 * h + i] = __uint_as_float((v & 0x007F8000u) | 0x3F800000u);
      }
    }
  }
}

// batch 1, symmetric codes (zero point 2^(BITS-1)), as the probe's cases
template <int BITS, int LOAD, int ROWS, int WARPS>
__global__ void matmul_nbits_v2(const float* a, const uint8_t* b, const float* scales, float* y,
                                Shape s) {
  constexpr int kCodes = LOAD * 8 / BITS;
  constexpr float kLevels = 1 << BITS, kZero = 1 << (BITS - 1);
  __shared__ float partial[ROWS][WARPS];
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * ROWS;
  const int64_t row_bytes = s.k_blocks * s.block * BITS / 8;
  const int64_t steps = (s.k + kCodes - 1) / kCodes;
  float acc[ROWS] = {};
  for (int64_t step = threadIdx.x; step < steps; step += blockDim.x) {
    const int64_t k0 = step * kCodes, j = k0 / s.block;
    uint32_t words[ROWS][LOAD / 4];
    float mult[ROWS], shift[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const int64_t n = n0 + r < s.n ? n0 + r : s.n - 1;
      load_words<LOAD>(b + n * row_bytes + k0 * BITS / 8, words[r]);
      const float scale = scales[n * s.k_blocks + j];
      mult[r] = scale * kLevels;
      shift[r] = -scale * (kLevels + kZero);
    }
#pragma unroll
    for (int c = 0; c < kCodes / kChunk; ++c) {
      float av[kChunk];
      load_a<true>(a, k0 + c * kChunk, s.k, av);
      float sum_a = 0.f;
#pragma unroll
      for (int i = 0; i < kChunk; ++i) sum_a += av[i];
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        float m[kChunk];
        chunk_m<BITS>(words[r], c, m);
        float dot = 0.f;
#pragma unroll
        for (int i = 0; i < kChunk; ++i) dot = fmaf(m[i], av[i], dot);
        acc[r] = fmaf(mult[r], dot, fmaf(shift[r], sum_a, acc[r]));
      }
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float sum = graphkiln::gpu::warp_reduce(acc[r], graphkiln::gpu::SumOp());
    if (lane == 0) partial[r][warp] = sum;
  }
  __syncthreads();
  for (int r = threadIdx.x; r < ROWS; r += blockDim.x) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) sum += partial[r][w];
    if (n0 + r < s.n) y[n0 + r] = sum;
  }
}

}  // namespace v2

namespace {

struct Case {
  int64_t n, k;
  int bits, block;
};

using Launch = void (*)(const float*, const uint8_t*, const float*, float*, const Shape&, int);

template <int BITS, int ROWS, int WARPS>
void launch(const float* a, const uint8_t* b, const float* scales, float* y, const Shape& s,
            int grid) {
  matmul_nbits<BITS, Zero::kNone, true, 16, 1, ROWS, WARPS>
      <<<grid, WARPS * 32>>>(a, b, scales, nullptr, nullptr, y, s);
}

template <int BITS, int ROWS, int WARPS>
void launch_v2(const float* a, const uint8_t* b, const float* scales, float* y, const Shape& s,
               int grid) {
  v2::matmul_nbits_v2<BITS, 16, ROWS, WARPS><<<grid, WARPS * 32>>>(a, b, scales, y, s);
}

struct Config {  // rows of W per block, warps per block, kernel
  int rows, warps;
  Launch four, eight;
  const char* kernel;
};

template <int ROWS, int WARPS>
Config config() {
  return {ROWS, WARPS, &launch<4, ROWS, WARPS>, &launch<8, ROWS, WARPS>, "gk"};
}

template <int ROWS, int WARPS>
Config config_v2() {
  return {ROWS, WARPS, &launch_v2<4, ROWS, WARPS>, &launch_v2<8, ROWS, WARPS>, "v2"};
}

double copy_rate() {
  const size_t bytes = size_t{1} << 30;
  void *src, *dst;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  CHECK(cudaEventRecord(start));
  for (int i = 0; i < 10; ++i) CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice));
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  return 2.0 * bytes * 10 / (ms / 1e3);
}

// Reads the codes (words 16-byte words at p) and the scales (more words at q) with UNROLL
// 16-byte loads in flight per thread; writes one word per block only when the XOR is a value
// random data does not give, so that the loads stay.
template <int UNROLL>
__global__ void read_only(const uint4* p, int64_t words, const uint4* q, int64_t more,
                          uint32_t* sink) {
  uint32_t x = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x, total = words + more;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += stride * UNROLL) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t w = i + u * stride;
      v[u] = w < words ? __ldcs(p + w) : w < total ? __ldcs(q + (w - words)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (x == 0x9E3779B9u) sink[blockIdx.x] = x;
}

using ReadLaunch = void (*)(const uint4*, int64_t, const uint4*, int64_t, uint32_t*, int);

template <int UNROLL>
void read_launch(const uint4* p, int64_t words, const uint4* q, int64_t more, uint32_t* sink,
                 int grid) {
  read_only<UNROLL><<<grid, 256>>>(p, words, q, more, sink);
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  const int only_case = argc > 2 ? std::atoi(argv[2]) : -1;
  const int only_config = argc > 3 ? std::atoi(argv[3]) : -1;
  cudaDeviceProp props;
  CHECK(cudaGetDeviceProperties(&props, 0));
  const double rate = copy_rate();
  std::printf("%s, %d SMs: device copy %.2f TB/s (read + write)\n\n", props.name,
              props.multiProcessorCount, rate / 1e12);
  const Case cases[] = {{4096, 4096, 4, 32},  {4096, 4096, 4, 128}, {11008, 4096, 4, 32},
                        {4096, 11008, 4, 32}, {14336, 4096, 4, 64}, {4096, 4096, 8, 32},
                        {32000, 4096, 4, 32}};
  const Config configs[] = {config<4, 4>(),  config<8, 4>(),  config<16, 4>(), config<8, 2>(),
                            config<16, 2>(), config<4, 8>(),  config<8, 8>(),  config<16, 1>(),
                            config<32, 2>(), config<32, 4>(), config<2, 4>(),
                            config_v2<4, 4>(), config_v2<8, 4>(), config_v2<16, 4>(),
                            config_v2<8, 8>()};
  std::printf(
      "| N | K | bits | block | kernel | rows/block | warps | us | GB/s | %% of copy | read floor us | "
      "%% of floor | max err |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::mt19937 gen(0);
  uint32_t* d_sink;
  CHECK(cudaMalloc(&d_sink, 1 << 20));
  int case_index = -1;
  for (const Case& c : cases) {
    if (++case_index != only_case && only_case >= 0) continue;
    Shape s{};
    s.m = 1, s.n = c.n, s.k = c.k, s.block = c.block;
    s.k_blocks = (c.k + c.block - 1) / c.block;
    const int64_t row_bytes = s.k_blocks * c.block * c.bits / 8;
    const size_t code_bytes = row_bytes * c.n, scale_count = c.n * s.k_blocks;
    const size_t one = code_bytes + scale_count * 4;
    const int copies = static_cast<int>((size_t{512} << 20) / one + 2);
    std::vector<uint8_t> codes(code_bytes);
    std::vector<float> scales(scale_count), a(c.k);
    for (auto& v : codes) v = static_cast<uint8_t>(gen());
    for (auto& v : scales) v = 0.001f + 0.01f * (gen() % 1000) / 1000.f;
    for (auto& v : a) v = (gen() % 2001) / 1000.f - 1.f;
    std::vector<uint8_t*> d_codes(copies);
    std::vector<float*> d_scales(copies);
    for (int i = 0; i < copies; ++i) {
      CHECK(cudaMalloc(&d_codes[i], code_bytes));
      CHECK(cudaMalloc(&d_scales[i], scale_count * 4));
      CHECK(cudaMemcpy(d_codes[i], codes.data(), code_bytes, cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(d_scales[i], scales.data(), scale_count * 4, cudaMemcpyHostToDevice));
    }
    float *d_a, *d_y;
    CHECK(cudaMalloc(&d_a, c.k * 4));
    CHECK(cudaMalloc(&d_y, c.n * 4));
    CHECK(cudaMemcpy(d_a, a.data(), c.k * 4, cudaMemcpyHostToDevice));
    // the host's y, in double
    std::vector<double> want(c.n);
    double max_want = 0;
    const int zero = 1 << (c.bits - 1);
    for (int64_t n = 0; n < c.n; ++n) {
      double sum = 0;
      for (int64_t k = 0; k < c.k; ++k) {
        const int64_t bit = k * c.bits;
        const int code = (codes[n * row_bytes + bit / 8] >> (bit % 8)) & ((1 << c.bits) - 1);
        sum += scales[n * s.k_blocks + k / c.block] * double(code - zero) * a[k];
      }
      want[n] = sum;
      max_want = std::fmax(max_want, std::fabs(sum));
    }
    const double needed = double(one) + c.k * 4.0 + c.n * 4.0;
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    // the read floor: the same codes and scales read by read_only, best of a few launch shapes
    double floor_us = 1e30;
    if (only_config < 0) {
      const ReadLaunch reads[] = {&read_launch<1>, &read_launch<2>, &read_launch<4>};
      const int64_t words = static_cast<int64_t>(code_bytes / 16);
      const int64_t more = static_cast<int64_t>(scale_count * 4 / 16);
      for (const ReadLaunch rl : reads) {
        for (const int per_sm : {4, 8, 16}) {
          const int grid = props.multiProcessorCount * per_sm;
          auto go = [&](int i) {
            rl(reinterpret_cast<const uint4*>(d_codes[i % copies]), words,
               reinterpret_cast<const uint4*>(d_scales[i % copies]), more, d_sink, grid);
          };
          for (int i = 0; i < 2 * copies; ++i) go(i);
          CHECK(cudaGetLastError());
          CHECK(cudaEventRecord(start));
          for (int i = 0; i < runs; ++i) go(i);
          CHECK(cudaEventRecord(stop));
          CHECK(cudaEventSynchronize(stop));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, start, stop));
          floor_us = std::fmin(floor_us, ms * 1e3 / runs);
        }
      }
    }
    int config_index = -1;
    for (const Config& cfg : configs) {
      if (++config_index != only_config && only_config >= 0) continue;
      const Launch fn = c.bits == 4 ? cfg.four : cfg.eight;
      const int grid = static_cast<int>((c.n + cfg.rows - 1) / cfg.rows);
      CHECK(cudaMemset(d_y, 0, c.n * 4));
      fn(d_a, d_codes[0], d_scales[0], d_y, s, grid);
      CHECK(cudaGetLastError());
      std::vector<float> got(c.n);
      CHECK(cudaMemcpy(got.data(), d_y, c.n * 4, cudaMemcpyDeviceToHost));
      double err = 0;
      for (int64_t n = 0; n < c.n; ++n) err = std::fmax(err, std::fabs(got[n] - want[n]));
      for (int i = 0; i < 2 * copies; ++i)
        fn(d_a, d_codes[i % copies], d_scales[i % copies], d_y, s, grid);
      CHECK(cudaEventRecord(start));
      for (int i = 0; i < runs; ++i)
        fn(d_a, d_codes[i % copies], d_scales[i % copies], d_y, s, grid);
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      const double us = ms * 1e3 / runs;
      std::printf(
          "| %lld | %lld | %d | %d | %s | %d | %d | %.2f | %.0f | %.0f%% | %.2f | %.0f%% | %.1e |\n",
          static_cast<long long>(c.n), static_cast<long long>(c.k), c.bits, c.block, cfg.kernel,
          cfg.rows,
          cfg.warps, us, needed / (us / 1e6) / 1e9, 100 * needed / (us / 1e6) / rate, floor_us,
          100 * floor_us / us, err / max_want);
    }
    std::fflush(stdout);
    for (int i = 0; i < copies; ++i) {
      CHECK(cudaFree(d_codes[i]));
      CHECK(cudaFree(d_scales[i]));
    }
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_y));
  }
  return 0;
}
