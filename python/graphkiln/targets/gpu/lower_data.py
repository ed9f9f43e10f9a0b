# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Data movement on the gpu target through the shared lowerings (targets/native/
lower_data.py; same kernel names and attributes, src/gpu/data.hip runs them): nearest
Resize and Pad in every mode (IndexMap), CumSum (constant axis), OneHot, Range, ScatterND,
ScatterElements; BitCast (same width: a byte copy); linear / cubic Resize of float32
data, one "ResizeAxis" step per resized axis with taps from the ref target's filter code;
and, through targets/native/lower_axis.py, TopK, Hardmax, LpNormalization (src/gpu/axis.hip)
and EyeLike (a constant)."""

from __future__ import annotations

from ...ir import DType, Node
from ..native import lower_axis as native_axis
from ..native import lower_data as native_data
from ..native.lower import LoweringContext
from .lower_tensor import lower_pad as gpu_pad


def lower_pad(node: Node, ctx: LoweringContext) -> None:
    """Constant padding as fill + copy (lower_tensor.py); other modes through IndexMap."""
    if gpu_pad.supports(node, ctx):
        return gpu_pad(node, ctx)
    return native_data.lower_pad(node, ctx)


lower_pad.supports = lambda node, ctx: (
    gpu_pad.supports(node, ctx) or native_data.lower_pad.supports(node, ctx)
)


def lower_cumsum(node: Node, ctx: LoweringContext) -> None:
    native_data.lower_cumsum(node, ctx)


lower_cumsum.supports = lambda node, ctx: (
    node.inputs[1].constant is not None and native_data.lower_cumsum.supports(node, ctx)
)


def lower_one_hot(node: Node, ctx: LoweringContext) -> None:
    native_data.lower_one_hot(node, ctx)


# float indices too (the gpu kernel truncates them, as ref does)
lower_one_hot.supports = lambda node, ctx: (
    node.inputs[0].type.dtype in (DType.i32, DType.i64, DType.f32, DType.f64)
)

# nearest through IndexMap, linear / cubic through ResizeAxis (targets/native/lower_resize.py)
lower_resize = native_data.lower_resize

LOWERINGS = {
    "Resize": lower_resize,
    "CumSum": lower_cumsum,
    **({"CumProd": lower_cumsum} if "CumProd" in native_data.LOWERINGS else {}),
    "OneHot": lower_one_hot,
    "Range": native_data.lower_range,
    "ScatterND": native_data.lower_scatter,
    "ScatterElements": native_data.lower_scatter,
    "Pad": lower_pad,
    **native_axis.LOWERINGS,
}
