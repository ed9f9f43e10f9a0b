# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of attention blocks: Attention, RotaryEmbedding, ...."""

from ..schema import define
from .. import infer
