# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of element type conversions: Cast, CastLike, BitCast."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
}
