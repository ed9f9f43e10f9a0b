// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// Winograd F(4x4, 3x3) convolution (winograd_conv.hpp): each 4x4 block of outputs ("tile")
// of each output channel costs 36 multiply-adds per input channel instead of the direct
// convolution's 144. The weights are transformed once, at build time (U = G g G^T, in
// double), and packed per chunk of output channels; each run transforms the input tiles,
// multiplies in 36 small GEMMs and transforms back (winograd_f43.inc), block by block of
// tiles so that a thread's V and M stay in its cache.
//   G (6x3) = [ 1/4     0     0  ]
//             [-1/6  -1/6  -1/6 ]
//             [-1/6   1/6  -1/6 ]
//             [ 1/24  1/12  1/6 ]
//             [ 1/24 -1/12  1/6 ]
//             [ 0     0     1  ]
#include "cpu/winograd_conv.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_features.hpp"
#include "cpu/onednn_common.hpp"

namespace graphkiln {
namespace {

using winograd::Isa;
using winograd::kPoints;
using winograd::kRows;
using winograd::PostKind;
using winograd::PostOp;
using winograd::Problem;

// The widest build of the inner loops this CPU runs (null without AVX2 + FMA); `avx2_only`
// takes the AVX2 one even where AVX-512 is there (GRAPHKILN_CPU_WINOGRAD=avx2: tests).
const Isa* cpu_isa(bool avx2_only) {
  static const Isa avx512{16, 32, winograd::inputs_avx512, winograd::products_avx512, "avx512"};
  static const Isa avx2{8, 16, winograd::inputs_avx2, winograd::products_avx2, "avx2"};
  if (cpu_features::avx512() && !avx2_only) return &avx512;
  return cpu_features::avx2_fma() ? &avx2 : nullptr;
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Tiles in one block of a run: V and M of the block in about 2 MiB (L2 or the near L3), at
// least one micro-kernel's rows and at most 16 of them.
int64_t block_tiles(int64_t channels, int64_t maps, int lanes, int chunk) {
  const int64_t per_tile = kPoints * (round_up(channels, lanes) + round_up(maps, chunk)) *
                           static_cast<int64_t>(sizeof(float));
  return std::clamp<int64_t>((2 << 20) / per_tile / kRows * kRows, kRows, 16 * kRows);
}

// U[q][xi][c][j] = (G g G^T)[xi] for output channel k = q * chunk + j (zero past K).
void transform_weights(const float* w, int64_t K, int64_t C, int chunk, float* u) {
  static const double G[6][3] = {{0.25, 0, 0},
                                 {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                 {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                 {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                 {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                 {0, 0, 1}};
  const int64_t chunks = round_up(K, chunk) / chunk;
  std::memset(u, 0, static_cast<size_t>(chunks * kPoints * C * chunk) * sizeof(float));
  for (int64_t k = 0; k < K; ++k) {
    const int64_t q = k / chunk, j = k % chunk;
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (k * C + c) * 9;
      double gt[6][3];  // G g
      for (int i = 0; i < 6; ++i)
        for (int s = 0; s < 3; ++s)
          gt[i][s] = G[i][0] * g[s] + G[i][1] * g[3 + s] + G[i][2] * g[6 + s];
      for (int i = 0; i < 6; ++i)
        for (int s = 0; s < 6; ++s) {
          const double v = gt[i][0] * G[s][0] + gt[i][1] * G[s][1] + gt[i][2] * G[s][2];
          u[((q * kPoints + i * 6 + s) * C + c) * chunk + j] = static_cast<float>(v);
        }
    }
  }
}

// The V of every tile of a run whose threads share it (see Split), from the thread that
// calls run(): one buffer per calling thread, apart from thread_scratch's, grown as needed.
float* run_scratch(size_t floats) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

// V and M of the calling thread's block: one buffer per thread, shared by every Winograd
// kernel (a thread runs one at a time; concurrent runs are on threads of their own), grown
// to the largest block asked for and kept. Zeroed when grown: the rows past a block's tiles
// feed the micro-kernel, never the output, and must hold finite values.
float* thread_scratch(size_t floats) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < floats) buffer.assign(floats, 0.0f);
  return buffer.data();
}

// The post-op chain as Winograd's output transform applies it; false where a post-op or
// operand is not one it takes (the step then stays on oneDNN).
struct PostPlan {
  int count = 0;
  PostOp ops[winograd::kMaxPostOps];
  int input[winograd::kMaxPostOps] = {};  // the kernel input of a binary operand, else -1
};

bool plan_post_ops(const KernelSpec& spec, PostPlan& plan) {
  if (!spec.attrs.has("post_ops")) return true;
  const auto names = spec.attrs.get_strs("post_ops");
  const auto alpha = spec.attrs.get_floats("post_alpha");
  const auto beta = spec.attrs.get_floats("post_beta");
  const auto arg = spec.attrs.get_ints("post_arg");
  if (names.size() > static_cast<size_t>(winograd::kMaxPostOps) || alpha.size() != names.size() ||
      beta.size() != names.size() || arg.size() != names.size())
    return false;
  const TensorInfo& y = spec.outputs[0];
  const int64_t K = y.dims[1];
  static const std::pair<const char*, PostKind> kinds[] = {
      {"relu", PostKind::relu}, {"clip", PostKind::clip}, {"linear", PostKind::linear},
      {"add", PostKind::add},   {"sub", PostKind::sub},   {"mul", PostKind::mul},
      {"max", PostKind::max},   {"min", PostKind::min}};
  for (size_t i = 0; i < names.size(); ++i) {
    PostOp& op = plan.ops[i];
    bool known = false;
    for (const auto& [name, kind] : kinds)
      if (names[i] == name) {
        op.kind = kind;
        known = true;
      }
    if (!known) return false;
    op.alpha = static_cast<float>(alpha[i]);
    op.beta = static_cast<float>(beta[i]);
    plan.input[i] = -1;
    if (op.kind >= PostKind::add) {
      const int a = static_cast<int>(arg[i]);
      if (a < 0 || !spec.has_input(a)) return false;
      const TensorInfo& b = spec.inputs[a];
      if (b.dtype != DType::f32) return false;
      // one value per output channel: (K), (K, 1, 1), (1, K, 1, 1)
      std::vector<int64_t> dims = b.dims;
      while (dims.size() < 4) dims.insert(dims.begin(), 1);
      const int64_t spots = y.dims[2] * y.dims[3];
      if (dims[0] == 1 && dims[1] == K && dims[2] == 1 && dims[3] == 1 && b.numel() == K &&
          (b.strides.empty() || b.is_contiguous())) {
        op.image = op.pixel = 0;
        op.channel = 1;
      } else if (b.dims == y.dims && b.is_channels_last()) {
        op.image = spots * K;
        op.pixel = K;
        op.channel = 1;
      } else if (b.dims == y.dims && b.is_contiguous()) {
        op.image = K * spots;
        op.pixel = 1;
        op.channel = spots;
      } else {
        return false;
      }
      plan.input[i] = a;
    }
  }
  plan.count = static_cast<int>(names.size());
  return true;
}

class WinogradConvKernel : public Kernel {
 public:
  WinogradConvKernel(const KernelSpec& spec, const Isa& isa, const PostPlan& post)
      : isa_(isa), post_(post) {
    const TensorInfo& x = spec.inputs[0];
    const TensorInfo& w = spec.inputs[1];
    const TensorInfo& y = spec.outputs[0];
    const auto pads = spec.attrs.get_ints("pads_begin", {0, 0});
    Problem& p = problem_;
    p.batch = x.dims[0];
    p.channels = x.dims[1];
    p.in_h = x.dims[2];
    p.in_w = x.dims[3];
    p.maps = y.dims[1];
    p.out_h = y.dims[2];
    p.out_w = y.dims[3];
    p.pad_top = pads[0];
    p.pad_left = pads[1];
    p.tiles_h = (p.out_h + winograd::kOut - 1) / winograd::kOut;
    p.tiles_w = (p.out_w + winograd::kOut - 1) / winograd::kOut;
    p.c_pad = round_up(p.channels, isa.lanes);
    p.k_pad = round_up(p.maps, isa.chunk);
    const int64_t C = p.channels, K = p.maps;
    const size_t u_bytes = static_cast<size_t>(p.k_pad * kPoints * C) * sizeof(float);
    const std::string layout = "winograd_f43;chunk=" + std::to_string(isa.chunk) +
                               ";k=" + std::to_string(K) + ";c=" + std::to_string(C);
    const float* weights = static_cast<const float*>(w.constant);
    p.u = static_cast<const float*>(own_packed_constant(
        layout, u_bytes,
        [&](void* out) { transform_weights(weights, K, C, isa.chunk, static_cast<float*>(out)); },
        u_owner_));
    bias_.assign(static_cast<size_t>(p.k_pad), 0.0f);
    has_bias_ = spec.has_input(2);
    if (has_bias_ && spec.inputs[2].constant != nullptr) {
      std::memcpy(bias_.data(), spec.inputs[2].constant, static_cast<size_t>(K) * sizeof(float));
      bias_is_constant_ = true;
    }
    p.bias = bias_.data();
    p.post_count = post_.count;
    for (int i = 0; i < post_.count; ++i) p.post[i] = post_.ops[i];
  }

  void run(const void* const* inputs, void* const* outputs) override {
    Problem p = problem_;
    p.x = static_cast<const float*>(inputs[0]);
    p.y = static_cast<float*>(outputs[0]);
    if (has_bias_ && !bias_is_constant_)
      std::memcpy(bias_.data(), inputs[2], static_cast<size_t>(p.maps) * sizeof(float));
    for (int i = 0; i < post_.count; ++i)
      if (post_.input[i] >= 0)
        p.post[i].operand = static_cast<const float*>(inputs[post_.input[i]]);

    const int threads = omp_get_max_threads();
    const Split split = split_for(threads);
    if (split.shared_inputs) run_shared_inputs(p, split);
    else run_blocks(p, split);
  }

  std::string description() const {  // what GRAPHKILN_ONEDNN_IMPL prints
    const Problem& p = problem_;
    const int threads = omp_get_max_threads();
    const Split split = split_for(threads);
    return "graphkiln winograd F(4x4,3x3) " + std::string(isa_.name) + ": " +
           std::to_string(p.batch * p.tiles_h * p.tiles_w) + " tiles, " +
           std::to_string(p.channels) + " -> " + std::to_string(p.maps) + " channels, " +
           std::to_string(post_.count) + " post-ops; " + std::to_string(threads) +
           " thread(s): " + std::to_string(split.blocks) + " block(s) x " +
           std::to_string(split.groups) + " chunk group(s)" +
           (split.shared_inputs ? ", inputs transformed once for all groups" : "");
  }

 private:
  // How a run's work is cut for `threads` (at least two pieces a thread where there are
  // several, so that a worker the OS preempts is covered by the others):
  //   - blocks of tiles (block_tiles); each block reads all of U, so few, large blocks where
  //     the weights are large;
  //   - where that gives too few pieces and U outweighs the V of all tiles (deep layers, few
  //     tiles), groups of output-channel chunks instead: each reads its part of U and the
  //     one V the threads transformed together first (shared_inputs; at most
  //     kSharedInputsBytes of it);
  //   - otherwise, or still too few, smaller blocks (each rereads U, which is small there).
  static constexpr int64_t kSharedInputsBytes = 16 << 20;
  struct Split {
    int64_t tile_block, blocks, groups, per_group;
    bool shared_inputs;
  };

  // Each work item transforms its own block's inputs, then multiplies and transforms back.
  void run_blocks(const Problem& p, const Split& split) {
    const int64_t items = split.blocks * split.groups;
    const size_t rows = static_cast<size_t>(round_up(split.tile_block, kRows));
    const size_t v_floats = kPoints * rows * static_cast<size_t>(p.c_pad);
    const size_t m_floats = kPoints * rows * static_cast<size_t>(split.per_group * isa_.chunk);
#pragma omp parallel for schedule(dynamic, 1) if (items > 1)
    for (int64_t item = 0; item < items; ++item) {
      float* v = thread_scratch(v_floats + m_floats);
      const Piece piece = piece_of(p, split, item);
      isa_.inputs(p, piece.t0, piece.count, v);
      isa_.products(p, piece.t0, piece.count, piece.q0, piece.q1, v, v + v_floats);
    }
  }

  // The threads first transform every tile's inputs once, into one V, kRows tiles at a time;
  // then each work item multiplies its block of that V by its group of chunks.
  void run_shared_inputs(const Problem& p, const Split& split) {
    const int64_t items = split.blocks * split.groups;
    const int64_t tiles = p.batch * p.tiles_h * p.tiles_w;
    const int64_t v_tile = kPoints * p.c_pad, steps = (tiles + kRows - 1) / kRows;
    float* v = run_scratch(static_cast<size_t>(steps * kRows * v_tile));
    const size_t m_floats = kPoints * static_cast<size_t>(round_up(split.tile_block, kRows)) *
                            static_cast<size_t>(split.per_group * isa_.chunk);
#pragma omp parallel
    {
#pragma omp for schedule(dynamic, 1)
      for (int64_t step = 0; step < steps; ++step) {
        const int64_t t0 = step * kRows;
        isa_.inputs(p, t0, std::min<int64_t>(kRows, tiles - t0), v + t0 * v_tile);
      }
#pragma omp for schedule(dynamic, 1)
      for (int64_t item = 0; item < items; ++item) {
        const Piece piece = piece_of(p, split, item);
        isa_.products(p, piece.t0, piece.count, piece.q0, piece.q1, v + piece.t0 * v_tile,
                      thread_scratch(m_floats));
      }
    }
  }

  struct Piece {
    int64_t t0, count, q0, q1;  // tiles [t0, t0 + count), chunks [q0, q1)
  };
  Piece piece_of(const Problem& p, const Split& split, int64_t item) const {
    const int64_t tiles = p.batch * p.tiles_h * p.tiles_w, chunks = p.k_pad / isa_.chunk;
    const int64_t b = item / split.groups, g = item % split.groups;
    const int64_t t0 = b * split.tile_block, q0 = g * split.per_group;
    return {t0, std::min(split.tile_block, tiles - t0), q0, std::min(chunks, q0 + split.per_group)};
  }

  Split split_for(int threads) const {
    const Problem& p = problem_;
    const int64_t tiles = p.batch * p.tiles_h * p.tiles_w, chunks = p.k_pad / isa_.chunk;
    const int64_t cap = block_tiles(p.channels, p.maps, isa_.lanes, isa_.chunk);
    const int64_t most_blocks = (tiles + kRows - 1) / kRows;
    const int64_t wanted = threads > 1 ? 2 * static_cast<int64_t>(threads) : 1;
    const int64_t u_bytes = kPoints * p.channels * p.k_pad * static_cast<int64_t>(sizeof(float));
    const int64_t v_bytes =
        most_blocks * kRows * kPoints * p.c_pad * static_cast<int64_t>(sizeof(float));
    int64_t blocks = (tiles + cap - 1) / cap, groups = 1;
    if (blocks < wanted && u_bytes > v_bytes && v_bytes <= kSharedInputsBytes)
      groups = std::min(chunks, (wanted + blocks - 1) / blocks);
    const int64_t per_group = (chunks + groups - 1) / groups;
    groups = (chunks + per_group - 1) / per_group;
    if (blocks * groups < wanted) blocks = std::min(most_blocks, (wanted + groups - 1) / groups);
    const int64_t tile_block = round_up((tiles + blocks - 1) / blocks, kRows);
    return {tile_block, (tiles + tile_block - 1) / tile_block, groups, per_group, groups > 1};
  }

  const Isa& isa_;
  PostPlan post_;
  Problem problem_{};
  std::shared_ptr<void> u_owner_;
  std::vector<float> bias_;
  bool has_bias_ = false, bias_is_constant_ = false;
};

// Whether F(4x4, 3x3) is expected to beat oneDNN's direct convolution. A cost model in
// nanoseconds per pair of input and output channels and per thread, its constants fitted to
// 3x3 layers measured where other weights share the caches (ResNet-50's, and chains of 8-10
// such convolutions) at 1 and 2 threads on a 2-core AVX-512 VM (benchmarks/results/
// winograd_cpu.md):
//   direct: 2 x 9 multiply-adds per output pixel at ~165 GFLOP/s, plus its weights (9
//     floats) read once at ~12 GB/s;
//   Winograd: 2 x 36 multiply-adds per micro-kernel row at ~116 GFLOP/s, the transforms
//     (~7 ns per tile and channel, in or out), and the transformed weights (36 floats) read
//     once from memory at ~12 GB/s (at ~24 GB/s where they are at most kCachedBytes: those
//     of a small layer stay in the last-level cache between runs) and again per further
//     block of tiles at ~24 GB/s (from the last-level cache).
// Winograd is taken where it costs at most 0.8 of the direct convolution: large images and
// batches, not the few tiles of a deep layer at batch 1, where its weights are 4x the direct
// ones and reading them is about half its time.
constexpr int64_t kCachedBytes = 1 << 20;

bool saves_enough(const KernelSpec& spec) {
  const TensorInfo& y = spec.outputs[0];
  const double C = static_cast<double>(spec.inputs[0].dims[1]), K = static_cast<double>(y.dims[1]);
  if (C < 16 || K < 16) return false;
  const int64_t tiles = y.dims[0] * ((y.dims[2] + winograd::kOut - 1) / winograd::kOut) *
                        ((y.dims[3] + winograd::kOut - 1) / winograd::kOut);
  const double pixels = static_cast<double>(y.dims[0] * y.dims[2] * y.dims[3]);
  const double direct = 18.0 * pixels / 165.0 + 36.0 / 12.0;
  const int64_t cap = block_tiles(spec.inputs[0].dims[1], y.dims[1], 16, 32);
  const double blocks = static_cast<double>((tiles + cap - 1) / cap);
  const bool small_u = 144.0 * C * K <= static_cast<double>(kCachedBytes);
  const double wino = 72.0 * static_cast<double>(round_up(tiles, kRows)) / 116.0 +
                      7.0 * (C + K) * static_cast<double>(tiles) / (C * K) +
                      144.0 / (small_u ? 24.0 : 12.0) + 144.0 * (blocks - 1) / 24.0;
  return wino <= 0.8 * direct;
}

}  // namespace

std::unique_ptr<Kernel> make_winograd_conv(const KernelSpec& spec) {
  const char* env = std::getenv("GRAPHKILN_CPU_WINOGRAD");
  const std::string choice = env != nullptr ? env : "";
  if (choice == "0") return nullptr;
  const Isa* isa = cpu_isa(choice == "avx2");
  if (isa == nullptr || spec.inputs.size() < 2 || spec.outputs.size() != 1) return nullptr;
  const TensorInfo& x = spec.inputs[0];
  const TensorInfo& w = spec.inputs[1];
  const TensorInfo& y = spec.outputs[0];
  if (x.dtype != DType::f32 || w.dtype != DType::f32 || y.dtype != DType::f32) return nullptr;
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4 || w.constant == nullptr) return nullptr;
  if (spec.attrs.get_int("group", 1) != 1 || w.dims[2] != 3 || w.dims[3] != 3 ||
      w.dims[1] != x.dims[1] || w.dims[0] != y.dims[1] || x.dims[0] != y.dims[0])
    return nullptr;
  for (const char* attr : {"strides", "dilations"})  // malformed ones: conv.cpp says so
    if (spec.attrs.get_ints(attr, {1, 1}) != std::vector<int64_t>{1, 1}) return nullptr;
  const auto pb = spec.attrs.get_ints("pads_begin", {0, 0});
  const auto pe = spec.attrs.get_ints("pads_end", {0, 0});
  if (pb.size() != 2 || pe.size() != 2) return nullptr;
  if (y.dims[2] != x.dims[2] + pb[0] + pe[0] - 2 || y.dims[3] != x.dims[3] + pb[1] + pe[1] - 2)
    return nullptr;
  if (!x.is_channels_last() || !y.is_channels_last()) return nullptr;
  if (spec.has_input(2) && (spec.inputs[2].dtype != DType::f32 ||
                            spec.inputs[2].numel() != y.dims[1] || !spec.inputs[2].is_contiguous()))
    return nullptr;
  const bool always = choice == "always" || choice == "avx2";  // tests: every step it serves
  if (!always && !saves_enough(spec)) return nullptr;
  PostPlan post;
  if (!plan_post_ops(spec, post)) return nullptr;
  auto kernel = std::make_unique<WinogradConvKernel>(spec, *isa, post);
  if (std::getenv("GRAPHKILN_ONEDNN_IMPL"))
    std::fprintf(stderr, "Conv %s: %s\n", spec.name.c_str(), kernel->description().c_str());
  return kernel;
}

}  // namespace graphkiln
