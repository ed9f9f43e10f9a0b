# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importers of onnxruntime's com.microsoft fused Conv / Gemm (as the ContribOperators
documentation defines them, and as onnxruntime's optimizer writes them), each as the IR
Conv / Gemm followed by its activation: FusedConv, FusedGemm; and NhwcConv, the channels-last
Conv."""

from __future__ import annotations

from ...ir import Value
from .context import ImportContext
from .microsoft_common import named, rank, refuse, scalar_like

CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
GEMM_ATTRS = ("alpha", "beta", "transA", "transB")


def _activate(ctx: ImportContext, x: Value, activation: str, params: list[float]):
    """activation(x) named as output 0: Relu, Tanh, Sigmoid; LeakyRelu(alpha = params[0]);
    Clip(min = params[0], max = params[1]); HardSigmoid(alpha, beta = params)."""
    need = {"Relu": 0, "Tanh": 0, "Sigmoid": 0, "LeakyRelu": 1, "Clip": 2, "HardSigmoid": 2}
    if activation not in need:
        raise refuse(ctx, f"activation {activation!r}; imported: {', '.join(sorted(need))}")
    if len(params) < need[activation]:
        raise refuse(ctx, f"activation {activation} needs {need[activation]} parameters")
    if activation == "LeakyRelu":
        return named(ctx, "LeakyRelu", [x], 0, {"alpha": params[0]})
    if activation == "HardSigmoid":
        return named(ctx, "HardSigmoid", [x], 0, {"alpha": params[0], "beta": params[1]})
    if activation == "Clip":
        low, high = scalar_like(ctx, x, params[0]), scalar_like(ctx, x, params[1])
        return named(ctx, "Clip", [x, low, high], 0)
    return named(ctx, activation, [x], 0)


def fused_conv(ctx: ImportContext):
    """FusedConv(X, W, B?, Z?; the Conv attributes, activation, activation_params): Y =
    activation(Conv(X, W, B) + Z), Z (the "sum" input) of Conv's output shape."""
    attrs = {k: v for k, v in ctx.attrs.items() if k in CONV_ATTRS}
    y = ctx.add("Conv", ctx.input(0), ctx.input(1), ctx.input(2), **attrs)
    if ctx.input(3) is not None:
        y = ctx.add("Add", y, ctx.input(3))
    params = [float(p) for p in ctx.attrs.get("activation_params", ())]
    return [_activate(ctx, y, str(ctx.attrs.get("activation", "Relu")), params)]


def nhwc_conv(ctx: ImportContext):
    """NhwcConv(X, W, B?; Conv's attributes): Conv with its data channels-last, as
    onnxruntime's transformer optimizer writes it for Transpose-Conv-Transpose chains: X [N,
    spatial..., C], W [M, kernel..., C / group] (its Conv weight with the input channels
    moved last), Y [N, spatial..., M]. Imported as the IR Conv between transposes (the layout
    passes fold them where the target keeps channels-last data)."""
    x, w = ctx.input(0), ctx.input(1)
    r = rank(x)
    if r is None or r < 3 or rank(w) != r:
        raise refuse(ctx, "X and W need the same known rank, at least 3")
    channels_first = (0, r - 1, *range(1, r - 1))
    attrs = {k: v for k, v in ctx.attrs.items() if k in CONV_ATTRS}
    y = ctx.add(
        "Conv",
        ctx.add("Transpose", x, perm=channels_first),
        ctx.add("Transpose", w, perm=channels_first),
        ctx.input(2),
        **attrs,
    )
    return [named(ctx, "Transpose", [y], 0, {"perm": (0, *range(2, r), 1)})]


def fused_gemm(ctx: ImportContext):
    """FusedGemm(A, B, C?; alpha, beta, transA, transB, activation, activation_alpha,
    activation_beta): Y = activation(Gemm(A, B, C)): LeakyRelu's alpha is activation_alpha,
    HardSigmoid's alpha / beta and Clip's min / max activation_alpha / activation_beta."""
    attrs = {k: v for k, v in ctx.attrs.items() if k in GEMM_ATTRS}
    y = ctx.add("Gemm", ctx.input(0), ctx.input(1), ctx.input(2), **attrs)
    a = ctx.attrs
    params = [float(a[k]) for k in ("activation_alpha", "activation_beta") if k in a]
    return [_activate(ctx, y, str(a.get("activation", "Relu")), params)]


OPS = {"FusedConv": fused_conv, "FusedGemm": fused_gemm, "NhwcConv": nhwc_conv}
