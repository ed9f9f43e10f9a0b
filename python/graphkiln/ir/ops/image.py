# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of image ops: Resize, Upsample, GridSample, AffineGrid, CenterCropPad, DepthToSpace, SpaceToDepth, NonMaxSuppression."""

from ..schema import define
from .. import infer
