# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of indexing: Slice, Gather*, Scatter*, OneHot, NonZero, Compress, Trilu, Unique, ReverseSequence, ...."""

import numpy as np

KERNELS = {
}
