# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of shape and layout: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Expand, Tile, Pad, Shape, Size, ..."""

from .. import infer
from ..schema import define

define("Identity", ("input",), ("output",), (), infer.same_as(0))
