# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of element type conversions: Cast, CastLike, BitCast."""

from ..schema import define
from .. import infer
