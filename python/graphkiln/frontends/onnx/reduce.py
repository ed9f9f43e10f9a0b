# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of reductions: Reduce*, ArgMax, ArgMin, CumSum, CumProd, TopK."""

import numpy as np

from .context import ImportContext


def axes_attribute_to_input(ctx: ImportContext):
    # Before ReduceSum-13 / Reduce*-18 `axes` was an attribute; the IR takes it as an input.
    attrs = dict(ctx.attrs)
    axes = attrs.pop("axes", None)
    inputs = [ctx.inputs[0]]
    if axes is not None:
        inputs.append(ctx.constant(np.array(axes, dtype=np.int64).reshape(-1)))
    return ctx.emit(inputs=inputs, attrs=attrs)


def k_attribute_to_input(ctx: ImportContext):
    # TopK-1 held k as an attribute; from TopK-10 on it is a 1-element int64 input.
    attrs = dict(ctx.attrs)
    k = attrs.pop("k")
    return ctx.emit(
        inputs=[ctx.inputs[0], ctx.constant(np.array([k], dtype=np.int64))], attrs=attrs
    )


def _reduce_entry(axes_input_since: int):
    return [(7, axes_attribute_to_input), (axes_input_since, None)]


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "ReduceSum": _reduce_entry(13),
    "ReduceMean": _reduce_entry(18),
    "ReduceMax": _reduce_entry(18),
    "ReduceMin": _reduce_entry(18),
    "ReduceProd": _reduce_entry(18),
    "ReduceL1": _reduce_entry(18),
    "ReduceL2": _reduce_entry(18),
    "ReduceLogSum": _reduce_entry(18),
    "ReduceLogSumExp": _reduce_entry(18),
    "ReduceSumSquare": _reduce_entry(18),
    "ArgMax": (7, None),
    "ArgMin": (7, None),
    "CumSum": (11, None),
    "CumProd": (26, None),
    "TopK": [(7, k_attribute_to_input), (10, None)],
}
