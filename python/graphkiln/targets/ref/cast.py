# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of element type conversions: Cast, CastLike, BitCast."""

import numpy as np

KERNELS = {
}
