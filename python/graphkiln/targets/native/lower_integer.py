# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The default domain's integer products -> kernels of the same names (src/cpu/int_matmul.cpp,
src/cpu/int_conv.cpp; the gpu runs them as host steps): MatMulInteger, QLinearMatMul,
ConvInteger, QLinearConv. i8 / u8 operands, sums in int32; the quantized ones requantize in
double as the ref target does (targets/ref/linalg.py, conv.py).

MatMul: batched and broadcast like MatMul (a 1-D operand is one row / column); each zero
point or scale is given to the kernel as element strides over (*batch, row of A) or (*batch,
column of B), from its shape as ref broadcasts it (a 1-D parameter of A of M > 1 values is
per row); QLinearMatMul's y_scale / y_zero_point must be one value. Conv: any number of
spatial dims, pads / strides / dilations / group / auto_pad resolved here; w's zero point,
QLinearConv's w_scale and B one value or one per output channel. `matmul_refusal(node)` /
`conv_refusal(node)` say what the kernels cannot run."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, Value
from .lower import LoweringContext, LoweringError, node_label, static_dims
from .lower_support import supports
from .window_attrs import window_attrs

_EIGHT_BIT = (DType.i8, DType.u8)
_SCALES = (DType.f32, DType.f64, DType.f16, DType.bf16)

# input positions: (A, B, A's zero point, B's zero point, A's scale, B's scale)
_MATMUL_INPUTS = {"MatMulInteger": (0, 1, 2, 3, None, None), "QLinearMatMul": (0, 3, 2, 5, 1, 4)}
# input positions: (x, w, x's zero point, w's zero point)
_CONV_INPUTS = {"ConvInteger": (0, 1, 2, 3), "QLinearConv": (0, 3, 2, 5)}


def _input(node: Node, i: int | None) -> Value | None:
    return node.inputs[i] if i is not None and i < len(node.inputs) else None


def _numel(value: Value) -> int:
    return int(np.prod(static_dims(value), dtype=np.int64))


def _contiguous_strides(dims) -> list[int]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= int(d)
    return strides[::-1]


def _broadcast_strides(dims, batch) -> list[int]:
    """Element strides of a row-major tensor of `dims` over the broadcast dims `batch`
    (right aligned; 0 where the tensor has size 1 or lacks the dim)."""
    own = _contiguous_strides(dims)
    lead = len(batch) - len(dims)
    return [0 if j < lead or dims[j - lead] == 1 else own[j - lead] for j in range(len(batch))]


def _param_strides(param: Value, operand: tuple, line_axis: int, per_row: bool, batch):
    """(strides over (*batch, line), None) of a zero point / scale of `operand`'s dims as ref
    broadcasts it (line_axis -2: A's rows, -1: B's columns), or (None, why not)."""
    count = len(batch) + 1
    if _numel(param) == 1:
        return [0] * count, None
    if len(operand) < 2:
        return None, "a parameter of a 1-D operand must be one value"
    dims = tuple(static_dims(param))
    if per_row and len(dims) == 1:  # ref's _row_param: an M-vector is (M, 1)
        dims = (dims[0], 1)
    if len(dims) > len(operand):
        return None, f"a parameter of dims {dims} has more dims than its operand {operand}"
    dims = (1,) * (len(operand) - len(dims)) + dims
    other = -1 if line_axis == -2 else -2
    if any(p not in (1, o) for p, o in zip(dims, operand)) or dims[other] != 1:
        return None, f"a parameter of dims {dims} does not fit {operand} per row / column"
    # 0 along the dims it broadcasts; where the operand has size 1 the parameter does too
    own = [0 if d == 1 else s for d, s in zip(dims, _contiguous_strides(dims))]
    lead = len(batch) - (len(operand) - 2)
    strides = [0 if j < lead else own[j - lead] for j in range(len(batch))]
    return strides + [own[line_axis]], None


def matmul_geometry(node: Node) -> tuple[dict | None, str | None]:
    """(the kernel's attrs, None) for a MatMulInteger / QLinearMatMul node, or (None, why)."""
    ia, ib, iza, izb, isa, isb = _MATMUL_INPUTS[node.op]
    a, b, y = node.inputs[ia], node.inputs[ib], node.outputs[0]
    if a.type.dtype not in _EIGHT_BIT or b.type.dtype not in _EIGHT_BIT:
        return (
            None,
            f"operands {a.type.dtype.name} and {b.type.dtype.name}; the kernel takes i8 / u8",
        )
    a_dims, b_dims = tuple(static_dims(a)), tuple(static_dims(b))
    if not a_dims or not b_dims:
        return None, "scalar operands"
    am = a_dims if len(a_dims) >= 2 else (1, a_dims[0])
    bm = b_dims if len(b_dims) >= 2 else (b_dims[0], 1)
    (m, k), (k2, n) = am[-2:], bm[-2:]
    if k != k2:
        return None, f"inner dims {k} and {k2} differ"
    try:
        batch = [int(d) for d in np.broadcast_shapes(am[:-2], bm[:-2])]
    except ValueError:
        return None, f"batch dims of {a_dims} and {b_dims} do not broadcast"
    if _numel(y) != int(np.prod(batch, dtype=np.int64)) * m * n:
        return None, f"the output dims {static_dims(y)} are not the product's"
    attrs = {
        "m": int(m),
        "k": int(k),
        "n": int(n),
        "batch": batch,
        "a_batch_strides": [s * m * k for s in _broadcast_strides(am[:-2], batch)],
        "b_batch_strides": [s * k * n for s in _broadcast_strides(bm[:-2], batch)],
    }
    params = (("a_zp", iza, a, -2), ("b_zp", izb, b, -1), ("a_scale", isa, a, -2))
    for name, index, operand, axis in params + (("b_scale", isb, b, -1),):
        param = _input(node, index)
        if param is None:
            continue
        wanted = _SCALES if name.endswith("scale") else (operand.type.dtype,)
        if param.type.dtype not in wanted:
            return None, f"{name} is {param.type.dtype.name}"
        shape = a_dims if operand is a else b_dims
        strides, why = _param_strides(param, shape, axis, operand is a, batch)
        if why:
            return None, why
        attrs[f"{name}_strides"] = strides
    if node.op == "QLinearMatMul":
        y_scale, y_zp = node.inputs[6], node.inputs[7]
        if y_scale.type.dtype not in _SCALES or y_zp.type.dtype not in _EIGHT_BIT:
            return None, "y_scale must be a float, y_zero_point i8 / u8"
        if _numel(y_scale) != 1 or _numel(y_zp) != 1:
            return None, "y_scale and y_zero_point must be one value"
        if y.type.dtype != y_zp.type.dtype:
            return None, "the output's dtype differs from y_zero_point's"
        if any(_input(node, i) is None for i in range(8)):
            return None, "an input is absent"
    elif y.type.dtype != DType.i32:
        return None, "the output must be int32"
    return attrs, None


def matmul_refusal(node: Node) -> str | None:
    """Why src/cpu/int_matmul.cpp cannot run `node`, or None."""
    return matmul_geometry(node)[1]


def conv_geometry(node: Node) -> tuple[dict | None, str | None]:
    """(the kernel's attrs, None) for a ConvInteger / QLinearConv node, or (None, why)."""
    ix, iw, izx, izw = _CONV_INPUTS[node.op]
    x, w, y = node.inputs[ix], node.inputs[iw], node.outputs[0]
    if x.type.dtype not in _EIGHT_BIT or w.type.dtype not in _EIGHT_BIT:
        return None, f"x {x.type.dtype.name}, w {w.type.dtype.name}; the kernel takes i8 / u8"
    x_dims, w_dims = static_dims(x), static_dims(w)
    rank = len(x_dims) - 2
    if rank < 1 or len(w_dims) != len(x_dims):
        return None, "x and w of rank 3 or more, the same"
    kernel = [int(d) for d in w_dims[2:]]
    if list(node.attrs.get("kernel_shape") or kernel) != kernel:
        return None, "kernel_shape differs from w's dims"
    group = int(node.attrs.get("group", 1) or 1)
    maps = int(w_dims[0])
    if group < 1 or x_dims[1] % group or maps % group or w_dims[1] * group != x_dims[1]:
        return None, f"channels of x {x_dims} and w {w_dims} do not fit group {group}"
    geo, out = window_attrs(x, kernel, node.attrs)
    if tuple(static_dims(y)) != (x_dims[0], maps, *[int(o) for o in out]):
        return None, f"the output dims {static_dims(y)} differ from the window geometry"
    if min(out) < 1 or min(geo["pads_begin"]) < 0 or min(geo["pads_end"]) < 0:
        return None, "an empty output or negative pads"
    for index, what, operand in ((izx, "x_zero_point", x), (izw, "w_zero_point", w)):
        zp = _input(node, index)
        if zp is not None and zp.type.dtype != operand.type.dtype:
            return None, f"{what} is {zp.type.dtype.name}, not its operand's dtype"
    w_zp = _input(node, izw)
    if w_zp is not None and _numel(w_zp) != 1 and tuple(static_dims(w_zp)) != (maps,):
        return None, f"w_zero_point of dims {static_dims(w_zp)}: one value or one per channel"
    if node.op == "QLinearConv":
        if any(_input(node, i) is None for i in range(8)):
            return None, "an input is absent"
        scales = [node.inputs[i] for i in (1, 4, 6)]
        if any(s.type.dtype not in _SCALES for s in scales):
            return None, "scales must be floats"
        if _numel(node.inputs[4]) not in (1, maps):
            return None, "w_scale: one value or one per output channel"
        y_zp = node.inputs[7]
        if y_zp.type.dtype not in _EIGHT_BIT or y.type.dtype != y_zp.type.dtype:
            return None, "y_zero_point and the output must be i8 / u8, the same"
        bias = _input(node, 8)
        if bias is not None and (bias.type.dtype != DType.i32 or _numel(bias) not in (1, maps)):
            return None, "B: int32, one value or one per output channel"
    elif y.type.dtype != DType.i32:
        return None, "the output must be int32"
    return {
        "in_dims": [int(d) for d in x_dims[2:]],
        "kernel": kernel,
        "out_dims": [int(o) for o in out],
        "pads_begin": [int(p) for p in geo["pads_begin"]],
        "strides": [int(s) for s in geo["strides"]],
        "dilations": [int(d) for d in geo["dilations"]],
        "group": group,
    }, None


def conv_refusal(node: Node) -> str | None:
    """Why src/cpu/int_conv.cpp cannot run `node`, or None."""
    return conv_geometry(node)[1]


def _lower_with(geometry):
    def lower(node: Node, ctx: LoweringContext) -> None:
        attrs, why = geometry(node)
        if why:
            raise LoweringError(
                f"the {ctx.target} target cannot run {node.op} {node_label(node)!r}: {why}"
            )
        ins = [ctx.input(v) for v in node.inputs]
        ctx.emit(node.op, ins, [ctx.output(node.outputs[0])], attrs, node.name)

    return supports(lambda node, ctx=None: geometry(node)[1] is None)(lower)


lower_matmul_integer = _lower_with(matmul_geometry)
lower_conv_integer = _lower_with(conv_geometry)

LOWERINGS = {
    "MatMulInteger": lower_matmul_integer,
    "QLinearMatMul": lower_matmul_integer,
    "ConvInteger": lower_conv_integer,
    "QLinearConv": lower_conv_integer,
}
