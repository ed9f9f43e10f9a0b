# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of tensors from nothing or from shapes: Constant, ConstantOfShape, Range, EyeLike, random ops."""

import numpy as np

from .context import ImportContext


def constant(ctx: ImportContext):
    # value_float 1.0 -> value = array(1.0, f32); sparse_value arrives already dense
    a = ctx.attrs
    dtypes = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
              "value_ints": np.int64, "value_string": object, "value_strings": object}
    for key in ("value", "sparse_value"):
        if key in a:
            return ctx.emit(attrs={"value": a[key]})
    for key, dtype in dtypes.items():
        if key in a:
            return ctx.emit(attrs={"value": np.array(a[key], dtype=dtype)})
    raise ValueError("Constant has no value attribute")


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Constant": (1, constant),
}
