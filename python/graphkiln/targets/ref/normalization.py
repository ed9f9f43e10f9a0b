# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of normalizations: BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization, RMSNormalization, LRN, ...."""

import numpy as np

KERNELS = {
}
