# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of pooling: AveragePool, MaxPool, LpPool, Global*Pool, MaxUnpool, RoiAlign."""

import numpy as np

KERNELS = {
}
