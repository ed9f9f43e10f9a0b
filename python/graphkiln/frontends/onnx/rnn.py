# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of recurrent layers: RNN, GRU, LSTM."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
}
