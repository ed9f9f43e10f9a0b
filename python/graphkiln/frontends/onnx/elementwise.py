# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of unary and binary math, comparisons, logic, bitwise, variadic (Sum/Max/...),
Where, Clip."""

import numpy as np

from .context import ImportContext


def clip_bounds_as_inputs(ctx: ImportContext):
    # Clip before opset 11: min / max attributes -> the optional inputs of the IR form
    x = ctx.inputs[0]
    dtype = x.type.dtype.numpy if getattr(x, "type", None) is not None else np.float32
    bounds = [
        None if ctx.attrs.get(key) is None else ctx.constant(np.array(ctx.attrs[key], dtype))
        for key in ("min", "max")
    ]
    while bounds and bounds[-1] is None:
        bounds.pop()
    return ctx.emit(inputs=[x] + bounds, attrs={})


_ONE_TO_ONE = {
    # unary math
    "Abs": 7,
    "Neg": 7,
    "Exp": 7,
    "Log": 7,
    "Sqrt": 7,
    "Reciprocal": 7,
    "Floor": 7,
    "Ceil": 7,
    "Round": 11,
    "Sign": 9,
    "Sin": 7,
    "Cos": 7,
    "Tan": 7,
    "Asin": 7,
    "Acos": 7,
    "Atan": 7,
    "Sinh": 9,
    "Cosh": 9,
    "Asinh": 9,
    "Acosh": 9,
    "Atanh": 9,
    "Erf": 9,
    "IsNaN": 9,
    "IsInf": 10,
    "Not": 7,
    "BitwiseNot": 18,
    # binary
    "Add": 7,
    "Sub": 7,
    "Mul": 7,
    "Div": 7,
    "Pow": 7,
    "Mod": 10,
    "BitShift": 11,
    "BitwiseAnd": 18,
    "BitwiseOr": 18,
    "BitwiseXor": 18,
    "And": 7,
    "Or": 7,
    "Xor": 7,
    "Equal": 7,
    "Less": 7,
    "LessOrEqual": 12,
    "Greater": 7,
    "GreaterOrEqual": 12,
    # variadic (opset 7 has no broadcasting: a subset of the later form)
    "Sum": 7,
    "Mean": 7,
    "Max": 7,
    "Min": 7,
    "Where": 9,
}

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {name: (since, None) for name, since in _ONE_TO_ONE.items()}
OPS["Clip"] = [(7, clip_bounds_as_inputs), (11, None)]
