# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A pointwise chain that maps one u8 / i8 tensor to a u8 / i8 tensor of the same shape,
with only scalar constants besides, is a function of one byte: its 256 values are computed
at compile time by the ref target's kernels on every byte, and the chain runs as the
"CastLookup" kernel (src/cpu/cast_bytes.cpp), one table read per element. In a QDQ model
these are the quantized activations: Q(Sigmoid(DQ(x))), a SiLU Q(DQ(x) * DQ(Q(Sigmoid(DQ(x))))),
HardSwish, LeakyRelu, Q(DQ(x)) with other parameters: what onnxruntime runs with tables as
QLinearSigmoid / QLinearLeakyRelu. The results are ref's, bit for bit."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, TensorType, Value
from ..native.lower import LoweringContext
from ..native.plan import CHANNELS_LAST, PLAIN

_BYTES = {DType.u8: np.uint8, DType.i8: np.int8}


def _dtype(value: Value | None) -> DType | None:
    t = None if value is None else value.type
    return t.dtype if isinstance(t, TensorType) else None


def _varying(node: Node) -> Value | None:
    """The one non-constant input of a Fused pointwise node whose other inputs are scalar
    constants, when it is u8 / i8 of the output's dims and the output is u8 / i8; else None."""
    varying = [v for v in node.inputs if v is not None and v.constant is None]
    if len(varying) != 1 or len(node.outputs) != 1:
        return None
    x, y = varying[0], node.outputs[0]
    if _dtype(x) not in _BYTES or _dtype(y) not in _BYTES:
        return None
    if getattr(x.type, "dims", None) != getattr(y.type, "dims", None):
        return None
    constants = [v for v in node.inputs if v is not None and v.constant is not None]
    if any(np.asarray(v.constant).size != 1 for v in constants):
        return None
    body = node.attrs["body"]
    if any(n.op == "Constant" and np.asarray(n.attrs["value"]).size != 1 for n in body.nodes):
        return None
    return x


def byte_table(node: Node) -> np.ndarray | None:
    """The 256 outputs of a Fused pointwise node that is a function of one byte (indexed by
    the byte's bits: i8 -128 is entry 128), or None."""
    from ..ref.evaluator import run_graph
    from ..ref.table import KERNELS

    x = _varying(node)
    if x is None:
        return None
    x_type = _BYTES[_dtype(x)]  # type: ignore[index]
    every_byte = np.arange(256, dtype=np.uint8).view(x_type)
    body = node.attrs["body"]
    feeds = [
        every_byte if outer is x else np.asarray(outer.constant).reshape(())
        for outer in node.inputs
    ]
    try:
        (values,) = run_graph(body, feeds, KERNELS)
    except Exception:  # noqa: BLE001 - a body ref cannot run on a vector: no table
        return None
    values = np.asarray(values)
    y_type = _BYTES[_dtype(node.outputs[0])]  # type: ignore[index]
    if values.size != 256 or values.dtype != np.dtype(y_type):
        return None
    return np.ascontiguousarray(values.reshape(256))


def lower_byte_table(node: Node, ctx: LoweringContext) -> bool:
    """Lower `node` as a table lookup when it is a function of one byte; False otherwise."""
    table = byte_table(node)
    if table is None:
        return False
    x = _varying(node)
    out = ctx.output(node.outputs[0], layouts=(PLAIN, CHANNELS_LAST))
    if ctx.plan.slots[out].layout == CHANNELS_LAST:
        source = ctx.input_channels_last(x)
    else:
        source = ctx.input(x)
    ctx.emit("CastLookup", [source, ctx.constant(table)], [out], {}, node.name)
    return True
