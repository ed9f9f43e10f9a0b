# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""QLinearConv and ConvInteger on oneDNN's int8 convolution (VNNI / AMX instructions where
the CPU has them): the "Conv" kernel of src/cpu/conv.cpp with quantization attrs. The QDQ
models onnxruntime's quantize_static writes become QLinearConv nodes in
passes/fold_quantized.py; quantize_dynamic writes DynamicQuantizeLinear -> ConvInteger
(x's zero point then an input the kernel reads at each run; the int32 sums are exact).

oneDNN takes: u8 / i8 x and y, constant i8 w with zero points 0 (symmetric weights, what
quantizers write for int8 weights), one x / y scale and zero point (constants), w_scale one
value or one per output channel, an int32 bias (given to the kernel in real units, B *
x_scale * w_scale, which is how oneDNN adds it). It requantizes in float32, so a result may
differ from the ref target's (double) by one unit where the value lies on a rounding
boundary. Anything else, and everything on a CPU without VNNI / AMX (int8_isa.py: oneDNN's
int8 sums saturate there), goes to the portable kernel (src/cpu/int_conv.cpp through
targets/native/lower_integer.py), which follows ref exactly."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, Value
from ..native.lower import LoweringContext
from ..native.lower_integer import conv_refusal, lower_conv_integer
from ..native.lower_support import supports
from ..native.plan import CHANNELS_LAST, PLAIN
from ..native.window_attrs import window_attrs
from .int8_isa import onednn_int8_exact

ANY_LAYOUT = (PLAIN, CHANNELS_LAST)
_INT8 = (DType.u8, DType.i8)


def _constant(value: Value | None) -> np.ndarray | None:
    return None if value is None or value.constant is None else np.asarray(value.constant)


def _one(value: Value | None) -> float | None:
    """The single value of a constant of one element, else None."""
    data = _constant(value)
    return None if data is None or data.size != 1 else data.reshape(()).item()


def onednn_attrs(node: Node) -> tuple[dict, np.ndarray | None] | None:
    """(the "Conv" kernel's attrs, its float32 bias or None) for a QLinearConv oneDNN runs,
    or None."""
    if conv_refusal(node) is not None or not onednn_int8_exact():
        return None
    x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp = node.inputs[:8]
    bias = node.inputs[8] if len(node.inputs) > 8 else None
    if x.type.dtype not in _INT8 or w.type.dtype != DType.i8 or not 3 <= len(x.type.dims) <= 5:
        return None
    if w.constant is None or (bias is not None and bias.constant is None):
        return None
    params = [_one(v) for v in (x_scale, x_zp, y_scale, y_zp)]
    w_scales, w_zeros = _constant(w_scale), _constant(w_zp)
    if any(p is None for p in params) or w_scales is None or w_zeros is None:
        return None
    if np.any(w_zeros != 0) or not np.all(np.isfinite(w_scales)):
        return None
    xs, xz, ys, yz = params
    if not (np.isfinite(xs) and np.isfinite(ys) and ys != 0):
        return None
    kernel = [int(d) for d in w.type.dims[2:]]
    attrs, _ = window_attrs(x, kernel, node.attrs)
    w_scales = w_scales.astype(np.float64).reshape(-1)
    attrs.update(
        group=int(node.attrs.get("group") or 1),
        q_src_scale=float(xs),
        q_wei_scales=[float(s) for s in w_scales],
        q_dst_scale=float(ys),
        q_src_zp=int(xz),
        q_dst_zp=int(yz),
    )
    real_bias = None
    if bias is not None:
        maps = int(w.type.dims[0])
        b = np.broadcast_to(np.asarray(bias.constant, np.float64).reshape(-1), (maps,))
        real_bias = (b * float(xs) * np.broadcast_to(w_scales, (maps,))).astype(np.float32)
    return attrs, real_bias


def integer_attrs(node: Node) -> dict | None:
    """The "Conv" kernel's attrs for a ConvInteger oneDNN runs (w constant i8 of zero point
    0 or none, x's zero point none or one value), or None."""
    if conv_refusal(node) is not None or not onednn_int8_exact():
        return None
    x, w = node.inputs[0], node.inputs[1]
    x_zp = node.inputs[2] if len(node.inputs) > 2 else None
    w_zp = node.inputs[3] if len(node.inputs) > 3 else None
    if x.type.dtype not in _INT8 or w.type.dtype != DType.i8 or w.constant is None:
        return None
    if not 3 <= len(x.type.dims) <= 5:
        return None
    if w_zp is not None and (w_zp.constant is None or np.any(np.asarray(w_zp.constant) != 0)):
        return None
    if (
        x_zp is not None
        and int(np.prod(getattr(x_zp.type, "dims", None) or (), dtype=np.int64)) != 1
    ):
        return None
    attrs, _ = window_attrs(x, [int(d) for d in w.type.dims[2:]], node.attrs)
    attrs["group"] = int(node.attrs.get("group") or 1)
    return attrs


@supports(lambda node, ctx=None: integer_attrs(node) is not None or conv_refusal(node) is None)
def lower_conv_integer_onednn(node: Node, ctx: LoweringContext) -> None:
    attrs = integer_attrs(node)
    if attrs is None:
        lower_conv_integer(node, ctx)
        return
    x_zp = node.inputs[2] if len(node.inputs) > 2 else None
    inputs = [ctx.input(node.inputs[0], layouts=ANY_LAYOUT), ctx.input(node.inputs[1]), None]
    if x_zp is not None and x_zp.constant is not None:
        attrs["q_src_zp"] = int(np.asarray(x_zp.constant).reshape(-1)[0])
    elif x_zp is not None:
        inputs.append(ctx.input(x_zp))
        attrs["q_src_zp_arg"] = len(inputs) - 1
    y = ctx.output(node.outputs[0], layouts=ANY_LAYOUT)
    ctx.emit("Conv", inputs, [y], attrs, node.name)


@supports(lambda node, ctx=None: onednn_attrs(node) is not None or conv_refusal(node) is None)
def lower_qlinear_conv(node: Node, ctx: LoweringContext) -> None:
    found = onednn_attrs(node)
    if found is None:
        lower_conv_integer(node, ctx)
        return
    attrs, bias = found
    x = ctx.input(node.inputs[0], layouts=ANY_LAYOUT)
    w = ctx.input(node.inputs[3])
    b = None if bias is None else ctx.constant(bias)
    y = ctx.output(node.outputs[0], layouts=ANY_LAYOUT)
    ctx.emit("Conv", [x, w, b], [y], attrs, node.name)


LOWERINGS = {"QLinearConv": lower_qlinear_conv, "ConvInteger": lower_conv_integer_onednn}
