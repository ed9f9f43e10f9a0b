# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear."""

from ..schema import define
from .. import infer
