# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of unary and binary math, comparisons, logic, bitwise, variadic (Sum/Max/...), Where, Clip."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Add": (7, None),
}
