# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of normalizations: BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization, RMSNormalization, LRN, ...."""

from ..schema import define
from .. import infer
