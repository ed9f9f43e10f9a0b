# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of signal processing: DFT, STFT, window functions, MelWeightMatrix."""

import numpy as np

from ...ir import DType
from .context import ImportContext


def dft_v17(ctx: ImportContext):
    # opset 17 has attribute axis (default 1); opset 20 made it an input (default -2)
    attrs = dict(ctx.attrs)
    axis = ctx.constant(np.array(attrs.pop("axis", 1), dtype=np.int64))
    signal = ctx.inputs[0]
    length = ctx.inputs[1] if len(ctx.inputs) > 1 else None
    return ctx.emit("DFT", [signal, length, axis], attrs)


def with_output_dtype(ctx: ImportContext):
    # output_datatype arrives as an ONNX TensorProto code
    attrs = dict(ctx.attrs)
    if "output_datatype" in attrs:
        attrs["output_datatype"] = DType.from_onnx(int(attrs["output_datatype"]))
    return ctx.emit(attrs=attrs)


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "DFT": [(17, dft_v17), (20, None)],
    "STFT": (17, None),
    "HannWindow": (17, with_output_dtype),
    "HammingWindow": (17, with_output_dtype),
    "BlackmanWindow": (17, with_output_dtype),
    "MelWeightMatrix": (17, with_output_dtype),
}
