# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of unary and binary math, comparisons, logic, bitwise, variadic (Sum/Max/...), Where, Clip."""

from .. import infer
from ..schema import define

define("Add", ("A", "B"), ("C",), (), infer.elementwise())
