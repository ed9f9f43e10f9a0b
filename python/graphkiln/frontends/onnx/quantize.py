# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear."""

from ...ir import DType
from .context import ImportContext


def dtype_codes_to_dtypes(ctx: ImportContext):
    # output_dtype / precision arrive as ONNX element type codes, 0 meaning "not set".
    # Opset 10 had no axis (per-tensor only); the IR's default axis=1 is then unused.
    attrs = dict(ctx.attrs)
    for key in ("output_dtype", "precision"):
        if key in attrs:
            code = int(attrs.pop(key))
            if code:
                attrs[key] = DType.from_onnx(code)
    return ctx.emit(attrs=attrs)


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "QuantizeLinear": (10, dtype_codes_to_dtypes),
    "DequantizeLinear": (10, dtype_codes_to_dtypes),
    "DynamicQuantizeLinear": (11, None),
}
