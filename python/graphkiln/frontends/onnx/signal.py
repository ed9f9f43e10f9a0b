# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of signal processing: DFT, STFT, window functions, MelWeightMatrix."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
}
