# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Pass pipelines built from named phases: `pipeline(name, extra)` is the list a target
runs (`Target.passes`); PIPELINES says which phases, in which order, each pipeline has, so
a target's pipeline is read here, not edited out of another's. `extra` fills the named
slots a pipeline leaves for passes a target chooses (the gpu's reduced-precision pass in
"before_fusion"; the cpu's int8 recognition in "start" and its expansion of the remaining
quantize / dequantize nodes in "before_fusion")."""

from __future__ import annotations

from . import (
    attention_heads,
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_batchnorm,
    fold_constants,
    fuse_epilogue,
    fuse_matmul_bias,
    fuse_pointwise,
    fuse_reduction,
    inline_constant_branches,
    inline_decompositions,
    normalize_gemm,
    promote_half,
    recognize_attention,
    recognize_gelu,
    recognize_layernorm,
    recognize_softmax,
    simplify_algebra,
    simplify_layout,
)

PHASES: dict[str, list] = {
    # clean up and fold first
    "cleanup": [
        eliminate_dead_code,
        fold_constants,
        inline_constant_branches,
        simplify_algebra,
        simplify_layout,
        fold_constants,
        eliminate_common_subexpressions,
        fold_batchnorm,
        normalize_gemm,
        fold_constants,
    ],
    # then recognize big ops
    "recognize": [
        recognize_gelu,
        recognize_softmax,
        recognize_layernorm,
        recognize_attention,
        simplify_layout,
        eliminate_dead_code,
    ],
    # nodes the target cannot run become their decompositions (ONNX function bodies),
    # decided on folded constants and static types, after recognition (which would rebuild
    # a refused op from its body) and before fusion (which fuses the bodies' ops)
    "decompose": [inline_decompositions, promote_half, eliminate_dead_code],
    # Attention reads [B, S, H*D] projections in place (no head transposes)
    "attention_layout": [attention_heads],
    # a projection's bias joins its product where a residual Add + normalization follows
    "matmul_bias": [fuse_matmul_bias],
    # then fuse what is left
    "fuse_pointwise": [fuse_pointwise],
    "fuse_epilogue": [fuse_epilogue],
    "fuse_reduction": [fuse_reduction],
    "finish": [eliminate_dead_code],
}
SLOTS = ("start", "before_fusion")  # phases a target fills through `extra`

PIPELINES: dict[str, tuple[str, ...]] = {
    "full": (
        "start",
        "cleanup",
        "recognize",
        "decompose",
        "attention_layout",
        "before_fusion",
        "fuse_pointwise",
        "fuse_epilogue",
        "fuse_reduction",
        "finish",
    ),
    # A pointwise node between a product and a reduction joins the reduction (residual Add +
    # LayerNormalization: one step) rather than the product's epilogue, which the gpu runs
    # as a step of its own anyway (its epilogues: bias and ReLU); a row bias before such a
    # residual Add joins the product first (fuse_matmul_bias: the Gemm's bias epilogue)
    "gpu": (
        "cleanup",
        "recognize",
        "decompose",
        "attention_layout",
        "before_fusion",
        "matmul_bias",
        "fuse_pointwise",
        "fuse_reduction",
        "fuse_epilogue",
        "finish",
    ),
}

# the Fused kinds each fusion pass may produce (a target lowers every kind of its pipeline:
# tests/passes/test_pipelines.py walks them against the targets' tables)
FUSED_KINDS = {
    fuse_pointwise: ("pointwise",),
    fuse_epilogue: ("conv", "gemm", "matmul"),
    fuse_matmul_bias: ("matmul",),
    fuse_reduction: ("reduce",),
}


def pipeline(name: str, extra: dict | None = None) -> list:
    """The passes of pipeline `name` (a key of PIPELINES), with `extra` (slot name -> passes)
    in its slots; ValueError for an unknown pipeline or slot."""
    if name not in PIPELINES:
        raise ValueError(f"no pass pipeline {name!r} (accepted: {', '.join(PIPELINES)})")
    extra = dict(extra or {})
    unknown = set(extra) - set(SLOTS)
    if unknown:
        raise ValueError(
            f"pipeline slots {sorted(unknown)} do not exist (accepted: {', '.join(SLOTS)})"
        )
    passes: list = []
    for phase in PIPELINES[name]:
        passes += extra.get(phase, []) if phase in SLOTS else PHASES[phase]
    return passes


def fused_kinds(passes) -> set[str]:
    """The Fused kinds the passes of a pipeline may produce."""
    return {kind for p in passes for kind in FUSED_KINDS.get(p, ())}


FULL = pipeline("full")
