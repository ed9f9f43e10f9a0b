# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of matrix products: MatMul, Gemm, Einsum, Det, MatMulInteger, QLinearMatMul."""

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy).
# Gemm-7 already broadcasts C without the old `broadcast` attribute; Gemm-11 made C optional:
# both are the IR form.
OPS = {
    "MatMul": (7, None),
    "Gemm": (7, None),
    "Einsum": (12, None),
    "Det": (11, None),
    "MatMulInteger": (10, None),
    "QLinearMatMul": (10, None),
}
