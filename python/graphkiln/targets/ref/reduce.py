# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of reductions: Reduce*, ArgMax, ArgMin, CumSum, CumProd, TopK."""

import numpy as np

KERNELS = {
}
