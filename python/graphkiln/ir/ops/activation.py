# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of activations: Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish, Gelu, Mish, ..."""

from .. import infer
from ..schema import define

define("Relu", ("X",), ("Y",), (), infer.same_as(0))
