# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of unary and binary math, comparisons, logic, bitwise, variadic (Sum/Max/...), Where, Clip."""

import numpy as np


def Add(a, b):
    return np.add(a, b)


KERNELS = {
    "Add": Add,
}
