# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importers of onnxruntime's com.microsoft fused Conv / Gemm (as the ContribOperators
documentation defines them, and as onnxruntime's optimizer writes them), each as the IR
Conv / Gemm followed by its activation: FusedConv, FusedGemm."""

from __future__ import annotations

from ...ir import Value
from .context import ImportContext
from .microsoft_common import named, refuse, scalar_like

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


def fused_gemm(ctx: ImportContext):
    """FusedGemm(A, B, C?; alpha, beta, transA, transB, activation, activation_alpha,
    activation_beta): Y = activation(Gemm(A, B, C)): LeakyRelu's alpha is activation_alpha,
    HardSigmoid's alpha / beta and Clip's min / max activation_alpha / activation_beta."""
    attrs = {k: v for k, v in ctx.attrs.items() if k in GEMM_ATTRS}
    y = ctx.add("Gemm", ctx.input(0), ctx.input(1), ctx.input(2), **attrs)
    a = ctx.attrs
    params = [float(a[k]) for k in ("activation_alpha", "activation_beta") if k in a]
    return [_activate(ctx, y, str(a.get("activation", "Relu")), params)]


OPS = {"FusedConv": fused_conv, "FusedGemm": fused_gemm}
