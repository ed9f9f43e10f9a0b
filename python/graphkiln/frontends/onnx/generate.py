# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of tensors from nothing or from shapes: Constant, ConstantOfShape, Range, EyeLike,
random ops."""

import numpy as np

from ...ir.dtypes import DType
from .context import ImportContext


def constant(ctx: ImportContext):
    # value_float 1.0 -> value = array(1.0, f32); sparse_value arrives already dense
    a = ctx.attrs
    dtypes = {
        "value_float": np.float32,
        "value_floats": np.float32,
        "value_int": np.int64,
        "value_ints": np.int64,
        "value_string": object,
        "value_strings": object,
    }
    for key in ("value", "sparse_value"):
        if key in a:
            return ctx.emit(attrs={"value": a[key]})
    for key, dtype in dtypes.items():
        if key in a:
            return ctx.emit(attrs={"value": np.array(a[key], dtype=dtype)})
    raise ValueError("Constant has no value attribute")


def dtype_code(ctx: ImportContext):
    """ONNX `dtype` attributes are TensorProto codes; the IR holds a DType."""
    attrs = dict(ctx.attrs)
    if attrs.get("dtype") is not None:
        attrs["dtype"] = DType.from_onnx(int(attrs["dtype"]))
    return ctx.emit(attrs=attrs)


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Constant": (1, constant),
    "ConstantOfShape": (9, None),
    "Range": (11, None),
    "EyeLike": (9, dtype_code),
    "RandomUniform": (1, dtype_code),
    "RandomNormal": (1, dtype_code),
    "RandomUniformLike": (1, dtype_code),
    "RandomNormalLike": (1, dtype_code),
    "Bernoulli": (15, dtype_code),
    "Multinomial": (7, dtype_code),
}
