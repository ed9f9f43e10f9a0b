// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// The products and the softmax of the cpu Attention kernel (attention.cpp) on AVX-512, built
// by attention_avx512.cpp for CPUs that have it (cpu_features::avx512()). At the sizes of
// attention heads (64 query rows x 64 keys x 64 features at BERT's) oneDNN's sgemm, which
// the kernel calls elsewhere, spends much of each call packing and dispatching; these work in
// register tiles of up to 6 rows by 4 vectors of 16 floats instead. Element strides are in
// floats; the last dim of every operand is contiguous.
#pragma once

#include <cstdint>

namespace graphkiln {
namespace attention_tiles {

// Keys rounded up to whole vectors: the leading dim of `scores`' output and of `kt`.
inline int64_t padded(int64_t n) { return (n + 15) / 16 * 16; }

// s[r * lds + j] = scale * sum_e q[r * qs + e] * k[j * ks + e], for r < rows, j < n, e < d.
// kt: scratch of d * padded(n) floats (K transposed, zero past n); lds >= padded(n). Entries
// of s between n and padded(n) are written too (scores of the zero keys).
void scores(const float* q, int64_t qs, int64_t rows, const float* k, int64_t ks, int64_t n,
            int64_t d, float scale, float* kt, float* s, int64_t lds);

// y[r * ys + e] = sum_j p[r * lds + j] * v[j * vs + e], for r < rows, e < dv, j < n.
void context(const float* p, int64_t lds, int64_t rows, int64_t n, const float* v, int64_t vs,
             int64_t dv, float* y, int64_t ys);

// row[0..n) <- softmax(row) (zeros when no entry is finite), with our vectorized exp.
void softmax_row(float* row, int64_t n);

}  // namespace attention_tiles
}  // namespace graphkiln
