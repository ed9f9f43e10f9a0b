# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of shape and layout: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Expand, Tile, Pad, Shape, Size, ..."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Identity": (1, None),
}
