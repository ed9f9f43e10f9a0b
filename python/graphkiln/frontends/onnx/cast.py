# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of element type conversions: Cast, CastLike, BitCast."""

from ...ir import DType
from .context import ImportContext


def to_as_dtype(ctx: ImportContext):
    # `to` is an ONNX element type code; the IR attribute is a DType
    attrs = dict(ctx.attrs)
    attrs["to"] = DType.from_onnx(int(attrs["to"]))
    return ctx.emit(attrs=attrs)


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Cast": (6, to_as_dtype),
    "CastLike": (15, None),
    "BitCast": (26, to_as_dtype),
}
