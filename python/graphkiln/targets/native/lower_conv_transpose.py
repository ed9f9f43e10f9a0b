# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ConvTranspose -> kernel "ConvTransposeDirect" (src/cpu/conv_transpose_direct.cpp), for what
oneDNN's deconvolution (lower_conv.py, constant weights, non-negative pads) does not take:
weights and bias read at run time, and output_shape / output_padding asking for more than the
full result (negative pads: the extra is zeros). float32, 1 to 3 spatial dims, groups,
strides, dilations, pads, auto_pad (SAME_UPPER / SAME_LOWER / VALID); the geometry comes from
ref's `transpose_geometry` on static shapes, padded to three spatial dims.

`refusal(node)` says why the kernel cannot run a node (None when it can)."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext, static_dims
from ..ref.conv import transpose_geometry


def _static(value) -> bool:
    dims = getattr(value.type, "dims", None)
    return dims is not None and all(isinstance(d, int) for d in dims)


def geometry(node: Node) -> tuple[dict, list]:
    """The kernel's geometry attrs (3 entries each) and the output's spatial dims."""
    x, w = node.inputs[0], node.inputs[1]
    sizes, kernel = list(static_dims(x)[2:]), list(static_dims(w)[2:])
    n = len(sizes)
    a = node.attrs
    strides = [int(s) for s in a.get("strides") or (1,) * n]
    dilations = [int(d) for d in a.get("dilations") or (1,) * n]
    begin, out = transpose_geometry(
        sizes,
        kernel,
        strides,
        dilations,
        a.get("pads"),
        a.get("auto_pad") or "NOTSET",
        a.get("output_padding"),
        a.get("output_shape"),
    )
    pad = 3 - n
    front = lambda values, fill: [fill] * pad + [int(v) for v in values]  # noqa: E731
    attrs = {
        "group": int(a.get("group") or 1),
        "kernel": front(kernel, 1),
        "strides": front(strides, 1),
        "dilations": front(dilations, 1),
        "pads_begin": front(begin, 0),
        "in_dims": front(sizes, 1),
        "out_dims": front(out, 1),
    }
    return attrs, [int(o) for o in out]


def refusal(node: Node) -> str | None:
    x, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 else None
    y = node.outputs[0]
    values = [v for v in (x, w, b, y) if v is not None]
    if not all(_static(v) for v in values):
        return "dynamic shapes"
    if any(v.type.dtype != DType.f32 for v in values):
        return "float32 only"
    rank = len(x.type.dims)
    if not 3 <= rank <= 5 or len(w.type.dims) != rank or len(y.type.dims) != rank:
        return "1 to 3 spatial dims, X and W of one rank"
    n = rank - 2
    a = node.attrs
    group = int(a.get("group") or 1)
    channels, out_channels = x.type.dims[1], y.type.dims[1]
    if group < 1 or channels % group or w.type.dims[0] != channels:
        return "W's first dim must be X's channels, divisible by group"
    if w.type.dims[1] * group != out_channels:
        return "Y's channels must be W's second dim times group"
    if b is not None and tuple(b.type.dims) != (out_channels,):
        return "B must be 1-D of Y's channels"
    if a.get("kernel_shape") and list(a["kernel_shape"]) != list(w.type.dims[2:]):
        return "kernel_shape differs from W's spatial dims"
    for name in ("strides", "dilations", "output_padding"):
        if a.get(name) is not None and len(a[name]) != n:
            return f"{name} must have one entry per spatial dim"
    if any(int(s) < 1 for s in (a.get("strides") or ())) or any(
        int(d) < 1 for d in (a.get("dilations") or ())
    ):
        return "strides and dilations must be positive"
    if a.get("pads") is not None and len(a["pads"]) != 2 * n:
        return "pads must have two entries per spatial dim"
    shape = a.get("output_shape")
    if shape is not None and len(shape) not in (n, n + 2):
        return "output_shape must list the spatial dims (or all dims)"
    if (a.get("auto_pad") or "NOTSET") not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        return f"auto_pad {a.get('auto_pad')!r}"
    _, out = geometry(node)
    if list(y.type.dims[2:]) != out or min(out) < 0:
        return "Y's dims differ from the geometry"
    return None


def supported(node: Node, ctx=None) -> bool:
    return refusal(node) is None


def lower_direct(node: Node, ctx: LoweringContext) -> None:
    b = node.inputs[2] if len(node.inputs) > 2 else None
    attrs, _ = geometry(node)
    inputs = [ctx.input(node.inputs[0]), ctx.input(node.inputs[1])]
    if b is not None:
        inputs.append(ctx.input(b))
    ctx.emit("ConvTransposeDirect", inputs, [ctx.output(node.outputs[0])], attrs, node.name)


lower_direct.supports = supported
# the cpu table lowers ConvTranspose through lower_conv.py (oneDNN first, then this); the
# gpu runs this one as a host step (targets/gpu/host_steps.py)
LOWERINGS = {"ConvTranspose": lower_direct}
