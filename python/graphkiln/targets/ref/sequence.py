# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of sequence and optional values: Sequence*, SplitToSequence, ConcatFromSequence, Optional*."""

import numpy as np

KERNELS = {
}
