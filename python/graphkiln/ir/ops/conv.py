# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of convolutions: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv, Col2Im."""

from ..schema import define
from .. import infer
