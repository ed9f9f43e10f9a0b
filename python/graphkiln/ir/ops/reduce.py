# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of reductions: Reduce*, ArgMax, ArgMin, CumSum, CumProd, TopK."""

from ..schema import define
from .. import infer
