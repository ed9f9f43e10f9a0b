# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of pooling: AveragePool, MaxPool, LpPool, Global*Pool, MaxUnpool, MaxRoiPool,
RoiAlign."""

from .context import ImportContext


def roi_align_10(ctx: ImportContext):
    # Before opset 16 RoiAlign did not shift pixels by half; the newer attribute's
    # 'output_half_pixel' value names exactly that behaviour.
    return ctx.emit(attrs={**ctx.attrs, "coordinate_transformation_mode": "output_half_pixel"})


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "AveragePool": (7, None),
    "MaxPool": (7, None),
    "LpPool": (7, None),
    "GlobalAveragePool": (7, None),
    "GlobalMaxPool": (7, None),
    "GlobalLpPool": (7, None),
    "MaxUnpool": (9, None),
    "MaxRoiPool": (7, None),
    "RoiAlign": [(10, roi_align_10), (16, None)],
}
