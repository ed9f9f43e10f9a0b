# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of activations: Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish, Gelu, Mish, ..."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Relu": (6, None),
}
