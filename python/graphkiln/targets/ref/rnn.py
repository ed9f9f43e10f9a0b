# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of recurrent layers: RNN, GRU, LSTM."""

import numpy as np

KERNELS = {
}
