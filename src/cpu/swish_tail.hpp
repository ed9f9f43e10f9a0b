// SPDX-License-Identifier: Apache-2.0
// Copyright graphkiln authors
// swish(x) = x * sigmoid(alpha * x), in place over a float tensor a oneDNN primitive has just
// written: the kernels that run a post-op chain ending in swish leave that last op out of
// oneDNN's chain and apply it with this (onednn_post_ops.hpp). oneDNN 3.2's swish post-op
// computes an exact exp and a division per lane; this loop uses our vectorized exp
// (fast_math.hpp). EfficientNet-B0's effect: benchmarks/results/cpu_vs_onnxruntime.md.
#pragma once

#include <cstdint>
#include <vector>

namespace graphkiln {

// The float tensor at `data` with `dims` and element `strides` (any order; overlapping views
// are not allowed), each element x replaced by x * sigmoid(alpha * x). Parallel over OpenMP's
// threads when it is large.
void swish_in_place(float* data, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& strides, float alpha);

}  // namespace graphkiln
