# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of attention blocks: Attention, RotaryEmbedding, ...."""

import numpy as np

KERNELS = {
}
