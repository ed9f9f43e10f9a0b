# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of indexing: Slice, Gather*, Scatter*, OneHot, NonZero, Compress, Trilu, Unique, ReverseSequence, ...."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
}
