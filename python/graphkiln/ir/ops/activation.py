# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of activations: Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish, Gelu,
Mish, ..."""

from .. import infer
from ..schema import define

_SAME = infer.same_as(0)

define("Relu", ("X",), ("Y",), (), _SAME, traits=("pointwise",))
define("LeakyRelu", ("X",), ("Y",), [("alpha", "float", 0.01)], _SAME, traits=("pointwise",))
# slope broadcasts to X (unidirectionally); the output is X's type and shape
define("PRelu", ("X", "slope"), ("Y",), (), _SAME, traits=("pointwise",))
define("Elu", ("X",), ("Y",), [("alpha", "float", 1.0)], _SAME, traits=("pointwise",))
define(
    "Selu",
    ("X",),
    ("Y",),
    [("alpha", "float", 1.67326319217681884765625), ("gamma", "float", 1.05070102214813232421875)],
    _SAME,
    traits=("pointwise",),
)
define("Celu", ("X",), ("Y",), [("alpha", "float", 1.0)], _SAME, traits=("pointwise",))
define("Sigmoid", ("X",), ("Y",), (), _SAME, traits=("pointwise",))
define(
    "HardSigmoid",
    ("X",),
    ("Y",),
    [("alpha", "float", 0.2), ("beta", "float", 0.5)],
    _SAME,
    traits=("pointwise",),
)
define("HardSwish", ("X",), ("Y",), (), _SAME, traits=("pointwise",))
define("Softplus", ("X",), ("Y",), (), _SAME, traits=("pointwise",))
define("Softsign", ("X",), ("Y",), (), _SAME, traits=("pointwise",))
define("Tanh", ("X",), ("Y",), (), _SAME, traits=("pointwise",))
define("ThresholdedRelu", ("X",), ("Y",), [("alpha", "float", 1.0)], _SAME, traits=("pointwise",))
define(
    "Shrink",
    ("X",),
    ("Y",),
    [("bias", "float", 0.0), ("lambd", "float", 0.5)],
    _SAME,
    traits=("pointwise",),
)
define("Mish", ("X",), ("Y",), (), _SAME, traits=("pointwise",))
define("Gelu", ("X",), ("Y",), [("approximate", "str", "none")], _SAME, traits=("pointwise",))
define("Swish", ("X",), ("Y",), [("alpha", "float", 1.0)], _SAME, traits=("pointwise",))
