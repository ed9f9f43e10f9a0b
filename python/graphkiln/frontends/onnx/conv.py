# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of convolutions: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv,
Col2Im, CausalConvWithState (all one-to-one: their ONNX forms never moved attributes to
inputs)."""

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Conv": (7, None),
    "ConvTranspose": (7, None),
    "ConvInteger": (10, None),
    "QLinearConv": (10, None),
    "DeformConv": (19, None),
    "Col2Im": (18, None),
    "CausalConvWithState": (27, None),
}
