# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""GatherND and ReverseSequence -> kernels of the same names (src/cpu/indexing.cpp): plain
tensors of any dtype, indices / sequence lengths i32 or i64 read at run time (one out of
range raises). ReverseSequence needs its batch and time axes to be dims 0 and 1 (as ONNX
defines them)."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext
from .lower_support import supports

_INDEX_DTYPES = (DType.i32, DType.i64)


def _gather_nd_ok(node: Node, ctx=None) -> bool:
    data, indices = node.inputs[0].type, node.inputs[1].type
    if indices.dtype not in _INDEX_DTYPES or data.dims is None or indices.dims is None:
        return False
    b = int(node.attrs.get("batch_dims", 0))
    depth = indices.dims[-1] if indices.dims else None
    return (
        isinstance(depth, int)
        and 0 <= b < min(len(data.dims), len(indices.dims))
        and 1 <= depth <= len(data.dims) - b
    )


@supports(_gather_nd_ok)
def lower_gather_nd(node: Node, ctx: LoweringContext) -> None:
    ins = [ctx.input(node.inputs[0]), ctx.input(node.inputs[1])]
    attrs = {"batch_dims": int(node.attrs.get("batch_dims", 0))}
    ctx.emit("GatherND", ins, [ctx.output(node.outputs[0])], attrs, node.name)


def _reverse_sequence_ok(node: Node, ctx=None) -> bool:
    x = node.inputs[0].type
    axes = (int(node.attrs.get("batch_axis", 1)), int(node.attrs.get("time_axis", 0)))
    return (
        node.inputs[1].type.dtype in _INDEX_DTYPES
        and x.dims is not None
        and len(x.dims) >= 2
        and axes in ((0, 1), (1, 0))
    )


@supports(_reverse_sequence_ok)
def lower_reverse_sequence(node: Node, ctx: LoweringContext) -> None:
    ins = [ctx.input(node.inputs[0]), ctx.input(node.inputs[1])]
    attrs = {
        "batch_axis": int(node.attrs.get("batch_axis", 1)),
        "time_axis": int(node.attrs.get("time_axis", 0)),
    }
    ctx.emit("ReverseSequence", ins, [ctx.output(node.outputs[0])], attrs, node.name)


LOWERINGS = {"GatherND": lower_gather_nd, "ReverseSequence": lower_reverse_sequence}
