# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of indexing: Slice, Gather*, Scatter*, OneHot, NonZero, Compress, Trilu, Unique, ReverseSequence, ...."""

from ..schema import define
from .. import infer
