# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of matrix products: MatMul, Gemm, Einsum, Det, MatMulInteger, QLinearMatMul."""

import numpy as np

KERNELS = {
}
