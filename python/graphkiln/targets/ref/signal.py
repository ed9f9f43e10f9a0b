# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of signal processing: DFT, STFT, window functions, MelWeightMatrix."""

import numpy as np

KERNELS = {
}
