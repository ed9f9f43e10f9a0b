# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of recurrent layers: RNN, GRU, LSTM."""

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy).
# Opsets 7..13 lack `layout`, whose default (0) is their behaviour, so a copy suffices.
OPS = {
    "RNN": (7, None),
    "GRU": (7, None),
    "LSTM": (7, None),
}
