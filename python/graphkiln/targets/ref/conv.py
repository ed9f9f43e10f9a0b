# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of convolutions: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv, Col2Im."""

import numpy as np

KERNELS = {
}
