# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of matrix products: MatMul, Gemm, Einsum, Det, MatMulInteger, QLinearMatMul."""

from .context import ImportContext

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
}
