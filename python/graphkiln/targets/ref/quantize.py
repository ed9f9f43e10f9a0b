# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear."""

import numpy as np

KERNELS = {
}
