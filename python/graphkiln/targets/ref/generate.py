# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of tensors from nothing or from shapes: Constant, ConstantOfShape, Range, EyeLike, random ops."""

import numpy as np


def Constant(*, value):
    return value


KERNELS = {
    "Constant": Constant,
}
