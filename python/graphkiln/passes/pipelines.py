# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Pass pipelines: plain lists, one place. Targets pick theirs in `Target.passes`."""

from . import (eliminate_common_subexpressions, eliminate_dead_code, fold_batchnorm,
               fold_constants, fuse_epilogue, fuse_pointwise, fuse_reduction, normalize_gemm,
               recognize_attention, recognize_gelu, recognize_layernorm, recognize_softmax,
               simplify_algebra, simplify_layout)

# Clean up and fold first, then recognize big ops, then fuse what is left.
FULL = [
    eliminate_dead_code,
    fold_constants,
    simplify_algebra,
    simplify_layout,
    fold_constants,
    eliminate_common_subexpressions,
    fold_batchnorm,
    normalize_gemm,
    fold_constants,
    recognize_gelu,
    recognize_softmax,
    recognize_layernorm,
    recognize_attention,
    simplify_layout,
    eliminate_dead_code,
    fuse_pointwise,
    fuse_epilogue,
    fuse_reduction,
    eliminate_dead_code,
]
