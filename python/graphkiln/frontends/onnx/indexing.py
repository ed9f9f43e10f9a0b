# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of indexing: Slice, Gather*, Scatter*, OneHot, NonZero, Compress, Trilu, Unique,
ReverseSequence, ...."""

import numpy as np

from .context import ImportContext


def slice_v1(ctx: ImportContext):
    # Slice-1: starts/ends/axes attributes -> inputs
    a = ctx.attrs
    inputs = [
        ctx.inputs[0],
        ctx.constant(np.array(a["starts"], dtype=np.int64)),
        ctx.constant(np.array(a["ends"], dtype=np.int64)),
    ]
    if a.get("axes") is not None:
        inputs.append(ctx.constant(np.array(a["axes"], dtype=np.int64)))
    return ctx.emit(inputs=inputs, attrs={})


def scatter(ctx: ImportContext):
    # Scatter (opset 9-10) is ScatterElements under its old name
    return ctx.emit("ScatterElements")


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Slice": [(1, slice_v1), (10, None)],
    "Gather": (1, None),
    "GatherElements": (11, None),
    "GatherND": (11, None),
    "Scatter": (9, scatter),
    "ScatterElements": (11, None),
    "ScatterND": (11, None),
    "OneHot": (9, None),
    "NonZero": (9, None),
    "Compress": (9, None),
    "Trilu": (14, None),
    "Unique": (11, None),
    "ReverseSequence": (10, None),
    "TensorScatter": (24, None),
}
