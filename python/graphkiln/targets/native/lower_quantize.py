# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""QuantizeLinear / DequantizeLinear (integer quantized types i8, u8, i16, u16, i32, u32;
float32 x / y and scale; per tensor, per axis or blocked) and DynamicQuantizeLinear ->
kernels of the same names (src/cpu/quantize.cpp). The lowering maps every element of x to
its scale / zero-point element with three strides (attrs outer, axis_len, inner, block,
param_outer, param_axis, param_inner). The one-byte types (float8, float4e2m1, int4,
uint4, int2, uint2; u8 storage in the core) go to "QuantizeLinearBytes" /
"DequantizeLinearBytes" with tables computed from ref. Refused: half-precision x, scales
or outputs, the `precision` attribute."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, Value
from .lower import LoweringContext, static_dims
from ..ref.quantize import to_quantized
from .lower_cast import step_function
from .lower_support import supports
from .plan import BYTE_DTYPES

_QUANT = frozenset({DType.i8, DType.u8, DType.i16, DType.u16, DType.i32, DType.u32})


def _dtype(v: Value | None):
    return None if v is None else getattr(v.type, "dtype", None)


def _param_map(node: Node) -> dict | None:
    """The kernel attrs mapping x's elements to the scale's, or None when the scale's
    shape fits none of per tensor / per axis / blocked."""
    x_dims = tuple(node.inputs[0].type.dims)
    s_dims = tuple(node.inputs[1].type.dims)
    zp = node.inputs[2] if len(node.inputs) > 2 else None
    one = lambda dims: int(np.prod(dims, dtype=np.int64)) == 1  # noqa: E731
    if zp is not None and tuple(zp.type.dims) != s_dims and not (one(zp.type.dims) and one(s_dims)):
        return None
    rank = len(x_dims)
    size = int(np.prod(s_dims, dtype=np.int64))
    block = int(node.attrs.get("block_size", 0) or 0)
    numel = int(np.prod(x_dims, dtype=np.int64))
    if rank == 0 or (size == 1 and block <= 0):
        return {
            "outer": 1,
            "axis_len": 1,
            "inner": numel,
            "block": 1,
            "param_outer": 0,
            "param_axis": 0,
            "param_inner": 0,
        }
    axis = int(node.attrs.get("axis", 1))
    if not -rank <= axis < rank:
        return None
    axis %= rank
    outer = int(np.prod(x_dims[:axis], dtype=np.int64))
    inner = int(np.prod(x_dims[axis + 1 :], dtype=np.int64))
    length = x_dims[axis]
    base = {"outer": outer, "axis_len": length, "inner": inner}
    if block <= 0:
        if len(s_dims) != 1 or s_dims[0] != length:
            return None
        return {**base, "block": 1, "param_outer": 0, "param_axis": 1, "param_inner": 0}
    blocks = -(-length // block)
    expected = x_dims[:axis] + (blocks,) + x_dims[axis + 1 :]
    if s_dims != expected:
        return None
    return {
        **base,
        "block": block,
        "param_outer": blocks * inner,
        "param_axis": inner,
        "param_inner": 1,
    }


def _quantize_ok(node: Node, ctx=None) -> bool:
    if node.attrs.get("precision") is not None:
        return False
    if _dtype(node.inputs[0]) != DType.f32 or _dtype(node.inputs[1]) != DType.f32:
        return False
    if _dtype(node.outputs[0]) not in _QUANT:
        if _dtype(node.outputs[0]) not in BYTE_DTYPES or _byte_quantize_attrs(node) is None:
            return False
    return _param_map(node) is not None


def _byte_values(dtype: DType, as_type) -> np.ndarray:
    """The value of each of the 256 bytes of a one-byte type (ref's astype)."""
    patterns = np.arange(256, dtype=np.uint8)
    if dtype in _SUB_BYTE:
        patterns = patterns & np.uint8((1 << _SUB_BYTE[dtype]) - 1)
    with np.errstate(all="ignore"):
        return np.ascontiguousarray(patterns.view(dtype.numpy).astype(as_type))


_SUB_BYTE = {DType.i4: 4, DType.u4: 4, DType.i2: 2, DType.u2: 2}


def _byte_quantize_attrs(node: Node) -> dict | None:
    to = _dtype(node.outputs[0])
    if to in _SUB_BYTE:
        import ml_dtypes

        info = ml_dtypes.iinfo(to.numpy)
        values = np.arange(int(info.min), int(info.max) + 1)
        codes = values.astype(to.numpy).view(np.uint8)
        return {
            "mode": "int",
            "lo": int(info.min),
            "hi": int(info.max),
            "codes": [int(c) for c in codes],
        }
    saturate = bool(node.attrs.get("saturate", 1))
    steps = _quantize_steps(to, saturate)
    if steps is None:
        return None
    names = ("pos_breaks", "pos_codes", "neg_breaks", "neg_codes", "nan_code")
    return {"mode": "float", **dict(zip(names, steps))}


_STEPS_CACHE: dict = {}


def _quantize_steps(to: DType, saturate: bool):
    key = (to, saturate)
    if key not in _STEPS_CACHE:
        try:
            _STEPS_CACHE[key] = step_function(
                DType.f32, to, lambda v: to_quantized(v, None, to.numpy, saturate)
            )
        except (ValueError, TypeError):
            _STEPS_CACHE[key] = None
    return _STEPS_CACHE[key]


def _dequantize_ok(node: Node, ctx=None) -> bool:
    if _dtype(node.inputs[0]) in BYTE_DTYPES and _dtype(node.inputs[1]) == DType.f32:
        return _dtype(node.outputs[0]) == DType.f32 and _param_map(node) is not None
    if _dtype(node.inputs[0]) not in _QUANT or _dtype(node.inputs[1]) != DType.f32:
        return False
    if _dtype(node.outputs[0]) != DType.f32:
        return False
    return _param_map(node) is not None


def _lower(node: Node, ctx: LoweringContext) -> None:
    static_dims(node.inputs[0])
    zp = node.inputs[2] if len(node.inputs) > 2 else None
    inputs = [
        ctx.input(node.inputs[0]),
        ctx.input(node.inputs[1]),
        None if zp is None else ctx.input(zp),
    ]
    attrs = _param_map(node)
    kernel = node.op
    if node.op == "QuantizeLinear" and _dtype(node.outputs[0]) in BYTE_DTYPES:
        kernel = "QuantizeLinearBytes"
        attrs.update(_byte_quantize_attrs(node))
        inputs.append(ctx.constant(_byte_values(_dtype(node.outputs[0]), np.float32)))
    elif node.op == "DequantizeLinear" and _dtype(node.inputs[0]) in BYTE_DTYPES:
        kernel = "DequantizeLinearBytes"
        inputs.append(ctx.constant(_byte_values(_dtype(node.inputs[0]), np.float64)))
    elif zp is None:
        inputs.pop()
    ctx.emit(kernel, inputs, [ctx.output(node.outputs[0])], attrs, node.name)


lower_quantize = supports(_quantize_ok)(lambda node, ctx: _lower(node, ctx))
lower_dequantize = supports(_dequantize_ok)(lambda node, ctx: _lower(node, ctx))
lower_quantize.byte_dtypes = True
lower_dequantize.byte_dtypes = True


def _dynamic_ok(node: Node, ctx=None) -> bool:
    return _dtype(node.inputs[0]) == DType.f32


@supports(_dynamic_ok)
def lower_dynamic_quantize(node: Node, ctx: LoweringContext) -> None:
    outs = [ctx.output(v) if v is not None else None for v in node.outputs]
    for i, v in enumerate(node.outputs):
        if v is None:
            outs[i] = ctx.temp(
                (DType.u8, DType.f32, DType.u8)[i], static_dims(node.inputs[0]) if i == 0 else ()
            )
    ctx.emit("DynamicQuantizeLinear", [ctx.input(node.inputs[0])], outs, {}, node.name)


LOWERINGS = {
    "QuantizeLinear": lower_quantize,
    "DequantizeLinear": lower_dequantize,
    "DynamicQuantizeLinear": lower_dynamic_quantize,
}
