# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of Softmax, LogSoftmax, Hardmax and the losses built on them."""

import numpy as np

KERNELS = {
}
