# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of sequence and optional values: Sequence*, SplitToSequence, ConcatFromSequence, Optional*."""

from ..schema import define
from .. import infer
