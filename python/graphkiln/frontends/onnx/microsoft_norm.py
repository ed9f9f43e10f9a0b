# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importers of onnxruntime's com.microsoft normalizations (as the ContribOperators
documentation defines them), each as IR ops: the residual adds, then the IR
LayerNormalization / RMSNormalization, which the fusion passes put on the fused kernels.
SkipLayerNormalization, SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization,
EmbedLayerNormalization."""

from __future__ import annotations

from ...ir import DType
from .context import ImportContext
from .microsoft_common import cast, ints, named, node, output_wanted, rank, refuse, scalar_like

BERT_EPSILON = 1e-12  # the default epsilon of the Skip / Embed layer normalizations


def _residual_sum(ctx: ImportContext, bias_index: int):
    """input + skip (+ bias): named input_skip_bias_sum when the node outputs it."""
    x, skip, bias = ctx.input(0), ctx.input(1), ctx.input(bias_index)
    if bias is None:
        return named(ctx, "Add", [x, skip], 3)
    return named(ctx, "Add", [ctx.add("Add", x, skip), bias], 3)


def _inv_rms(ctx: ImportContext, x, axes: list[int], epsilon: float, index: int):
    """1 / sqrt(mean(x * x over `axes`) + epsilon), the axes kept (as size 1)."""
    mean = ctx.add("ReduceMean", ctx.add("Mul", x, x), ints(ctx, axes), keepdims=1)
    root = ctx.add("Sqrt", ctx.add("Add", mean, scalar_like(ctx, x, epsilon)))
    return named(ctx, "Reciprocal", [root], index)


def _names(ctx: ImportContext, *indices: int) -> list:
    return [ctx.output_names[i] if output_wanted(ctx, i) else None for i in indices]


def skip_layer_normalization(ctx: ImportContext):
    """SkipLayerNormalization(input, skip, gamma, beta?, bias?; epsilon = 1e-12): s = input +
    skip (+ bias), LayerNormalization of s over the last axis scaled by gamma (+ beta).
    Outputs: output, mean?, inv_std_var? (those of the normalization, the last axis kept as
    size 1), input_skip_bias_sum? (s)."""
    eps = float(ctx.attrs.get("epsilon", BERT_EPSILON))
    total = _residual_sum(ctx, 4)
    gamma, beta = ctx.input(2), ctx.input(3)
    norm_inputs = [total, gamma] + ([beta] if beta is not None else [])
    out, mean, inv = node(
        ctx, "LayerNormalization", norm_inputs, {"axis": -1, "epsilon": eps}, _names(ctx, 0, 1, 2)
    )
    return [out, mean, inv, total if output_wanted(ctx, 3) else None]


def skip_simplified_layer_normalization(ctx: ImportContext):
    """SkipSimplifiedLayerNormalization(input, skip, gamma, bias?; epsilon = 1e-12): s =
    input + skip (+ bias), then the RMS normalization of s over the last axis scaled by gamma.
    Outputs: output, mean (refused: the op computes none), inv_std_var? (the last axis kept
    as size 1), input_skip_bias_sum? (s)."""
    if output_wanted(ctx, 1):
        raise refuse(ctx, "the mean output of SkipSimplifiedLayerNormalization is not imported")
    eps = float(ctx.attrs.get("epsilon", BERT_EPSILON))
    total = _residual_sum(ctx, 3)
    out = named(ctx, "RMSNormalization", [total, ctx.input(2)], 0, {"axis": -1, "epsilon": eps})
    inv = _inv_rms(ctx, total, [-1], eps, 2) if output_wanted(ctx, 2) else None
    return [out, None, inv, total if output_wanted(ctx, 3) else None]


def simplified_layer_normalization(ctx: ImportContext):
    """SimplifiedLayerNormalization(X, scale; axis = -1, epsilon = 1e-5): the RMS
    normalization X / sqrt(mean(X^2 over axes axis..) + epsilon) * scale. Outputs: Y,
    inv_std_var? (the normalized axes kept as size 1)."""
    a = ctx.attrs
    axis, eps = int(a.get("axis", -1)), float(a.get("epsilon", 1e-5))
    x = ctx.input(0)
    if a.get("stash_type", 1) != 1:
        raise refuse(ctx, "stash_type other than float32 (1)")
    out = named(ctx, "RMSNormalization", [x, ctx.input(1)], 0, {"axis": axis, "epsilon": eps})
    if not output_wanted(ctx, 1):
        return [out, None]
    r = rank(x)
    if r is None:
        raise refuse(ctx, "the inv_std_var output needs the rank of X")
    first = axis + r if axis < 0 else axis
    return [out, _inv_rms(ctx, x, list(range(first, r)), eps, 1)]


def embed_layer_normalization(ctx: ImportContext):
    """EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
    segment_embedding?, gamma, beta, mask?, position_ids?; epsilon = 1e-12): the rows of the
    three tables picked by the word ids, the positions (position_ids, else 0 .. seq-1) and the
    segment ids, summed (output embedding_sum), then LayerNormalization over the hidden axis
    (output). mask_index: the sum of each batch row of mask, as int32 (the count of 1s, the
    length of a right-padded sequence)."""
    ids, segment_ids, words, positions = ctx.inputs[:4]
    segments, gamma, beta = ctx.input(4), ctx.input(5), ctx.input(6)
    mask, position_ids = ctx.input(7), ctx.input(8)
    eps = float(ctx.attrs.get("epsilon", BERT_EPSILON))
    total = ctx.add("Gather", words, ids, axis=0)
    if position_ids is not None:
        pos = ctx.add("Gather", positions, position_ids, axis=0)
    else:  # the first `sequence` rows of the table, broadcast over the batch
        seq = ctx.add("Shape", ids, start=1, end=2)
        pos = ctx.add("Slice", positions, ints(ctx, [0]), seq, ints(ctx, [0]))
    if (segments is None) != (segment_ids is None):
        raise refuse(ctx, "segment_ids and segment_embedding come together")
    if segments is None:
        total = named(ctx, "Add", [total, pos], 2)
    else:
        segment_rows = ctx.add("Gather", segments, segment_ids, axis=0)
        total = named(ctx, "Add", [ctx.add("Add", total, pos), segment_rows], 2)
    out = named(ctx, "LayerNormalization", [total, gamma, beta], 0, {"axis": -1, "epsilon": eps})
    mask_index = None
    if output_wanted(ctx, 1):
        if mask is None:
            raise refuse(ctx, "the mask_index output without a mask input")
        # summed as float32 (exact for 0 / 1 up to 2^24 keys), which every target reduces
        counts = ctx.add("ReduceSum", cast(ctx, mask, DType.f32), ints(ctx, [1]), keepdims=0)
        mask_index = named(ctx, "Cast", [counts], 1, {"to": DType.i32})
    return [out, mask_index, total if output_wanted(ctx, 2) else None]


OPS = {
    "SkipLayerNormalization": skip_layer_normalization,
    "SkipSimplifiedLayerNormalization": skip_simplified_layer_normalization,
    "SimplifiedLayerNormalization": simplified_layer_normalization,
    "EmbedLayerNormalization": embed_layer_normalization,
}
