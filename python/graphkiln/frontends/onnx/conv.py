# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of convolutions: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv, Col2Im."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
}
