# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importers of onnxruntime's com.microsoft activations, bias adds and FusedMatMul (as the
ContribOperators documentation defines them), each as a composition of IR ops: Gelu,
FastGelu, BiasGelu, QuickGelu, BiasSplitGelu, BiasAdd, FusedMatMul."""

from __future__ import annotations

from .context import ImportContext
from .microsoft_common import dims, ints, named, node, rank, refuse, scalar_like


def gelu(ctx: ImportContext):
    """Gelu: the exact GELU, x * 0.5 * (1 + erf(x / sqrt(2))); the IR Gelu."""
    return [named(ctx, "Gelu", [ctx.input(0)], 0, {"approximate": "none"})]


def fast_gelu(ctx: ImportContext):
    """FastGelu(X, bias?): with x = X (+ bias), 0.5 * x * (1 + tanh(0.797885 * x +
    0.035677 * x^3)), which is the tanh approximation of GELU (sqrt(2/pi) = 0.797885,
    sqrt(2/pi) * 0.044715 = 0.035677): the IR Gelu with approximate "tanh"."""
    x, bias = ctx.input(0), ctx.input(1)
    if bias is not None:
        x = ctx.add("Add", x, bias)
    return [named(ctx, "Gelu", [x], 0, {"approximate": "tanh"})]


def bias_gelu(ctx: ImportContext):
    """BiasGelu(A, B): the exact GELU of A + B (B a 1-D bias over the last axis)."""
    x = ctx.add("Add", ctx.input(0), ctx.input(1))
    return [named(ctx, "Gelu", [x], 0, {"approximate": "none"})]


def quick_gelu(ctx: ImportContext):
    """QuickGelu(X; alpha = 1.702): X * Sigmoid(alpha * X)."""
    x = ctx.input(0)
    alpha = float(ctx.attrs.get("alpha", 1.702))
    gate = ctx.add("Sigmoid", ctx.add("Mul", x, scalar_like(ctx, x, alpha)))
    return [named(ctx, "Mul", [x, gate], 0)]


def bias_split_gelu(ctx: ImportContext):
    """BiasSplitGelu(X, bias): with x = X + bias (X [N, S, D], bias [D], D even), the left
    half of x's last axis times the exact GELU of its right half: Y [N, S, D / 2] (the
    fusion onnxruntime writes for diffusion UNets' GEGLU)."""
    bias_dims = dims(ctx.input(1))
    if bias_dims is None or len(bias_dims) != 1 or not isinstance(bias_dims[0], int):
        raise refuse(ctx, "bias must be 1-D with a static size")
    if bias_dims[0] % 2:
        raise refuse(ctx, f"the hidden size {bias_dims[0]} is odd: it cannot be split in halves")
    half = bias_dims[0] // 2
    x = ctx.add("Add", ctx.input(0), ctx.input(1))
    base = ctx.name or "biassplitgelu"
    left, right = node(
        ctx, "Split", [x, ints(ctx, [half, half])], {"axis": -1}, [f"{base}_left", f"{base}_right"]
    )
    gate = ctx.add("Gelu", right, approximate="none")
    return [named(ctx, "Mul", [left, gate], 0)]


def bias_add(ctx: ImportContext):
    """BiasAdd(X, bias, skip): X + bias (over the channels, the last axis) + skip."""
    x, bias, skip = ctx.inputs[:3]
    return [named(ctx, "Add", [ctx.add("Add", x, bias), skip], 0)]


def _fused_matmul_operand(ctx: ImportContext, value, trans: int, trans_batch: int, side: str):
    """`value` as FusedMatMul multiplies it. transBatch moves the first axis (the batch) to
    the row axis: [d0, d1, ..., dr-2, dr-1] -> [d1, ..., dr-2, d0, dr-1]; with trans too the
    last two axes of that are swapped. trans alone swaps the last two axes."""
    if not trans and not trans_batch:
        return value
    r = rank(value)
    if r is None:
        raise refuse(ctx, f"trans{side} / transBatch{side} need the rank of {side}")
    if r < 2 or (trans_batch and r < 3):
        raise refuse(ctx, f"trans{side} / transBatch{side} on a rank-{r} {side}")
    perm = list(range(r))
    if trans_batch:
        perm = list(range(1, r - 1)) + [0, r - 1]
    if trans:
        perm[-1], perm[-2] = perm[-2], perm[-1]
    return ctx.add("Transpose", value, perm=tuple(perm))


def fused_matmul(ctx: ImportContext):
    """FusedMatMul(A, B; alpha, transA, transB, transBatchA, transBatchB): alpha times
    numpy.matmul of A and B, each transposed first as its flags say."""
    a = ctx.attrs
    left = _fused_matmul_operand(
        ctx, ctx.input(0), int(a.get("transA", 0)), int(a.get("transBatchA", 0)), "A"
    )
    right = _fused_matmul_operand(
        ctx, ctx.input(1), int(a.get("transB", 0)), int(a.get("transBatchB", 0)), "B"
    )
    alpha = float(a.get("alpha", 1.0))
    if alpha == 1.0:
        return [named(ctx, "MatMul", [left, right], 0)]
    product = ctx.add("MatMul", left, right)
    return [named(ctx, "Mul", [product, scalar_like(ctx, product, alpha)], 0)]


OPS = {
    "Gelu": gelu,
    "FastGelu": fast_gelu,
    "BiasGelu": bias_gelu,
    "QuickGelu": quick_gelu,
    "BiasSplitGelu": bias_split_gelu,
    "BiasAdd": bias_add,
    "FusedMatMul": fused_matmul,
}
