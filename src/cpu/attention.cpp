// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// "Attention" (ONNX Attention, output Y only, f32): softmax(scale * Q K^T + mask) V per
// (batch, head), in blocks of query rows, parallel over (batch, head, block) with OpenMP.
// The Python lowering gives every tensor as a 4-D (batch, heads, seq, features) view:
//   batch, q_heads, kv_heads, q_seq, kv_seq, head, v_head
//   q_strides, k_strides, v_strides, y_strides   4 element strides each (features: 1)
//   mask_strides (4, 0 where broadcast), mask_len (keys at or past it are masked)
//   scale, softcap, is_causal, left_window, right_window (-1: none)
//   pos_offset: absolute position of query row 0 (past_key's length; causal frontier and
//     windows use it, the mask rows do not)
// Q K^T and P V are dnnl_sgemm calls on the block, or on AVX-512 CPUs our register tiles
// (attention_tiles.hpp; GRAPHKILN_CPU_ATTENTION_TILES=0 keeps sgemm); the scores buffer of
// each thread is allocated at build time.
#include <oneapi/dnnl/dnnl.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/kernel.hpp"
#include "cpu/attention_tiles.hpp"
#include "cpu/cpu_features.hpp"
#include "cpu/fast_math.hpp"

namespace graphkiln {
namespace {

constexpr int64_t kBlock = 128;  // most query rows per task

// row[0..n) <- softmax(row) (zeros when no entry is finite).
void softmax_row_plain(float* row, int64_t n) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  float top = neg_inf;
  for (int64_t j = 0; j < n; ++j) top = std::max(top, row[j]);
  if (!(top > neg_inf)) {
    for (int64_t j = 0; j < n; ++j) row[j] = 0.0f;
    return;
  }
  float total = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = fastmath::exp(row[j] - top);
    total += row[j];
  }
  const float inv = 1.0f / total;
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

// exp of 8 lanes (x <= 0 here: scores minus their maximum); 0 below -87.
__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
  const __m256 low = _mm256_set1_ps(-87.0f);
  __m256 under = _mm256_cmp_ps(x, low, _CMP_LT_OQ);
  x = _mm256_max_ps(x, low);
  const __m256 magic = _mm256_set1_ps(12582912.0f);
  __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
  __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 y = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000));
  __m256 scale =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ni, _mm256_set1_epi32(127)), 23));
  return _mm256_andnot_ps(under, _mm256_mul_ps(y, scale));
}

__attribute__((target("avx2,fma"))) void softmax_row_avx2(float* row, int64_t n) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  __m256 vmax = _mm256_set1_ps(neg_inf);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(row + j));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float top = neg_inf;
  for (int l = 0; l < 8; ++l) top = std::max(top, lanes[l]);
  for (; j < n; ++j) top = std::max(top, row[j]);
  if (!(top > neg_inf)) {
    for (j = 0; j < n; ++j) row[j] = 0.0f;
    return;
  }
  const __m256 vtop = _mm256_set1_ps(top);
  __m256 vsum = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), vtop));
    _mm256_storeu_ps(row + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  _mm256_store_ps(lanes, vsum);
  float total = 0.0f;
  for (int l = 0; l < 8; ++l) total += lanes[l];
  for (; j < n; ++j) {
    row[j] = fastmath::exp(row[j] - top);
    total += row[j];
  }
  const __m256 vinv = _mm256_set1_ps(1.0f / total);
  for (j = 0; j + 8 <= n; j += 8)
    _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), vinv));
  const float inv = 1.0f / total;
  for (; j < n; ++j) row[j] *= inv;
}

using SoftmaxFn = void (*)(float*, int64_t);
SoftmaxFn pick_softmax(bool tiles) {
  if (tiles) return attention_tiles::softmax_row;
  return cpu_features::avx2_fma() ? softmax_row_avx2 : softmax_row_plain;
}

// The AVX-512 tiles unless the CPU lacks AVX-512 or GRAPHKILN_CPU_ATTENTION_TILES=0.
bool use_tiles() {
  const char* env = std::getenv("GRAPHKILN_CPU_ATTENTION_TILES");
  return cpu_features::avx512() && !(env != nullptr && std::strcmp(env, "0") == 0);
}

std::vector<int64_t> strides4(const KernelSpec& spec, const char* name) {
  std::vector<int64_t> s = spec.attrs.get_ints(name);
  if (s.size() != 4) spec_error(spec, std::string(name) + " must have 4 entries");
  return s;
}

class AttentionKernel : public Kernel {
 public:
  explicit AttentionKernel(const KernelSpec& spec)
      : tiles_(use_tiles()), softmax_(pick_softmax(tiles_)) {
    const Attrs& a = spec.attrs;
    batch_ = a.get_int("batch");
    q_heads_ = a.get_int("q_heads");
    kv_heads_ = a.get_int("kv_heads");
    q_seq_ = a.get_int("q_seq");
    kv_seq_ = a.get_int("kv_seq");
    head_ = a.get_int("head");
    v_head_ = a.get_int("v_head");
    qs_ = strides4(spec, "q_strides");
    ks_ = strides4(spec, "k_strides");
    vs_ = strides4(spec, "v_strides");
    ys_ = strides4(spec, "y_strides");
    scale_ = static_cast<float>(a.get_float("scale"));
    softcap_ = static_cast<float>(a.get_float("softcap", 0.0));
    causal_ = a.get_int("is_causal", 0) != 0;
    left_ = a.get_int("left_window", -1);
    right_ = a.get_int("right_window", -1);
    off_ = a.get_int("pos_offset", 0);
    if (kv_heads_ <= 0 || q_heads_ % kv_heads_ != 0)
      spec_error(spec, "kv heads must divide q heads");
    for (size_t i = 0; i < 3; ++i)
      if (spec.inputs[i].dtype != DType::f32) spec_error(spec, "only f32 is supported");
    if (spec.outputs[0].dtype != DType::f32) spec_error(spec, "only f32 is supported");
    has_mask_ = spec.has_input(3);
    if (has_mask_) {
      ms_ = strides4(spec, "mask_strides");
      mask_len_ = a.get_int("mask_len");
      DType mt = spec.inputs[3].dtype;
      if (mt != DType::f32 && mt != DType::boolean) spec_error(spec, "mask must be f32 or bool");
      mask_bool_ = mt == DType::boolean;
    }
    threads_ = std::max(1, spec.num_threads);
    // blocks of up to kBlock rows, smaller while there are too few tasks for the threads
    block_ = std::min<int64_t>(kBlock, std::max<int64_t>(q_seq_, 1));
    while (block_ > 16 && batch_ * q_heads_ * ((q_seq_ + block_ - 1) / block_) < 4 * threads_)
      block_ /= 2;
    // a row of scores per query row of a block: whole vectors of keys for the tiles
    const int64_t keys = std::max<int64_t>(kv_seq_, 1);
    row_room_ = tiles_ ? attention_tiles::padded(keys) : keys;
    scores_.assign(static_cast<size_t>(threads_) * block_ * row_room_, 0.0f);
    if (tiles_) packed_keys_.assign(static_cast<size_t>(threads_) * head_ * row_room_, 0.0f);
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const float* q = static_cast<const float*>(inputs[0]);
    const float* k = static_cast<const float*>(inputs[1]);
    const float* v = static_cast<const float*>(inputs[2]);
    const void* mask = has_mask_ ? inputs[3] : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    const int64_t blocks = (q_seq_ + block_ - 1) / block_;
    const int64_t tasks = batch_ * q_heads_ * blocks;
    const int64_t group = q_heads_ / kv_heads_;
    int nthr = static_cast<int>(std::min<int64_t>(threads_, std::max<int64_t>(tasks, 1)));
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthr)
    for (int64_t task = 0; task < tasks; ++task) {
      int64_t blk = task % blocks, bh = task / blocks;
      int64_t b = bh / q_heads_, h = bh % q_heads_, hk = h / group;
      int tid = omp_get_thread_num();
      float* s = scores_.data() + static_cast<size_t>(tid) * block_ * row_room_;
      float* kt = tiles_ ? packed_keys_.data() + static_cast<size_t>(tid) * head_ * row_room_
                         : nullptr;
      block(q + b * qs_[0] + h * qs_[1], k + b * ks_[0] + hk * ks_[1], v + b * vs_[0] + hk * vs_[1],
            mask, b, h, y + b * ys_[0] + h * ys_[1], blk * block_,
            std::min(q_seq_, (blk + 1) * block_), s, kt);
    }
  }

 private:
  // Query rows [i0, i1) of one (batch, head); s holds (i1 - i0) x row_room_ scores, kt (the
  // tiles only) head_ x row_room_ packed keys.
  void block(const float* q, const float* k, const float* v, const void* mask, int64_t b, int64_t h,
             float* y, int64_t i0, int64_t i1, float* s, float* kt) const {
    const int64_t rows = i1 - i0;
    // keys any row of the block may attend
    int64_t k0 = 0, k1 = kv_seq_;
    if (has_mask_) k1 = std::min(k1, mask_len_);
    if (causal_) k1 = std::min(k1, off_ + i1);
    if (right_ >= 0) k1 = std::min(k1, off_ + i1 - 1 + right_ + 1);
    if (left_ >= 0) k0 = std::max<int64_t>(0, off_ + i0 - left_);
    const int64_t n = k1 - k0;
    if (n <= 0) {
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t d = 0; d < v_head_; ++d) y[(i0 + i) * ys_[2] + d] = 0.0f;
      return;
    }
    // the leading dim of s: whole vectors of keys for the tiles
    const int64_t ld = tiles_ ? attention_tiles::padded(n) : n;
    if (tiles_) {
      attention_tiles::scores(q + i0 * qs_[2], qs_[2], rows, k + k0 * ks_[2], ks_[2], n, head_,
                              scale_, kt, s, ld);
    } else {
      dnnl_sgemm('N', 'T', rows, n, head_, scale_, q + i0 * qs_[2], qs_[2], k + k0 * ks_[2], ks_[2],
                 0.0f, s, ld);
    }
    const float neg_inf = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < rows; ++i) {
      float* row = s + i * ld;
      const int64_t pos = i0 + i;
      if (softcap_ > 0.0f) {
        const float inv = 1.0f / softcap_;
        for (int64_t j = 0; j < n; ++j) row[j] = softcap_ * fastmath::tanh(row[j] * inv);
      }
      if (has_mask_) {
        const int64_t base = b * ms_[0] + h * ms_[1] + pos * ms_[2];
        const int64_t step = ms_[3];
        if (mask_bool_) {
          const bool* m = static_cast<const bool*>(mask) + base;
          for (int64_t j = 0; j < n; ++j)
            if (!m[(k0 + j) * step]) row[j] = neg_inf;
        } else {
          const float* m = static_cast<const float*>(mask) + base;
          if (step == 1) {
            for (int64_t j = 0; j < n; ++j) row[j] += m[k0 + j];
          } else {
            for (int64_t j = 0; j < n; ++j) row[j] += m[(k0 + j) * step];
          }
        }
      }
      // per-row key limits (causal frontier and sliding window)
      const int64_t qpos = off_ + pos;
      int64_t hi = k1;
      if (causal_) hi = std::min(hi, qpos + 1);
      if (right_ >= 0) hi = std::min(hi, qpos + right_ + 1);
      int64_t lo = k0;
      if (left_ >= 0) lo = std::max(lo, qpos - left_);
      for (int64_t j = k0; j < std::min(lo, k1); ++j) row[j - k0] = neg_inf;
      for (int64_t j = std::max(hi, k0); j < k1; ++j) row[j - k0] = neg_inf;
      softmax_(row, n);
    }
    if (tiles_) {
      attention_tiles::context(s, ld, rows, n, v + k0 * vs_[2], vs_[2], v_head_, y + i0 * ys_[2],
                               ys_[2]);
    } else {
      dnnl_sgemm('N', 'N', rows, v_head_, n, 1.0f, s, ld, v + k0 * vs_[2], vs_[2], 0.0f,
                 y + i0 * ys_[2], ys_[2]);
    }
  }

  bool tiles_;  // before softmax_, which depends on it
  SoftmaxFn softmax_;
  int64_t batch_, q_heads_, kv_heads_, q_seq_, kv_seq_, head_, v_head_;
  std::vector<int64_t> qs_, ks_, vs_, ys_, ms_;
  float scale_, softcap_;
  bool causal_, has_mask_ = false, mask_bool_ = false;
  int64_t left_, right_, mask_len_ = 0, off_ = 0;
  int threads_;
  int64_t block_;
  int64_t row_room_ = 0;  // floats a row of scores takes
  std::vector<float> scores_, packed_keys_;
};

std::unique_ptr<Kernel> make_attention(const KernelSpec& spec) {
  if (spec.inputs.size() < 3 || spec.outputs.size() != 1)
    spec_error(spec, "takes Q, K, V (and a mask) and gives Y only");
  return std::make_unique<AttentionKernel>(spec);
}

}  // namespace

GRAPHKILN_REGISTER_KERNEL("Attention", make_attention);

}  // namespace graphkiln
