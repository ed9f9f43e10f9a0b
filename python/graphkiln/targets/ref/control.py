# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of control flow with subgraphs: If, Loop, Scan."""

import numpy as np

KERNELS = {
}
