# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of image ops: Resize, Upsample, GridSample, AffineGrid, CenterCropPad, DepthToSpace, SpaceToDepth, NonMaxSuppression."""

import numpy as np

KERNELS = {
}
