# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of activations: Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish,
Gelu, Mish, ..."""

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Relu": (6, None),
    "LeakyRelu": (6, None),
    "PRelu": (7, None),
    "Elu": (6, None),
    "Selu": (6, None),
    "Celu": (12, None),
    "Sigmoid": (6, None),
    "HardSigmoid": (6, None),
    "HardSwish": (14, None),
    "Softplus": (1, None),
    "Softsign": (1, None),
    "Tanh": (6, None),
    "ThresholdedRelu": (10, None),
    "Shrink": (9, None),
    "Mish": (18, None),
    "Gelu": (20, None),
    "Swish": (24, None),
}
