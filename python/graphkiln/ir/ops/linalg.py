# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of matrix products: MatMul, Gemm, Einsum, Det, MatMulInteger, QLinearMatMul."""

from ..schema import define
from .. import infer
