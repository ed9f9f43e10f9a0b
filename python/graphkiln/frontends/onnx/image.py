# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of image ops: Resize, Upsample, GridSample, AffineGrid, CenterCropPad,
NonMaxSuppression.

ImageDecoder is not imported: decoding JPEG/PNG/WebP needs an image library, not numpy alone."""

import numpy as np

from .context import ImportContext

# Upsample and Resize-10 index the input like x_original = x_resized / scale and take the
# floor for nearest: the asymmetric transform of later Resize versions.
_OLD_RESIZE_ATTRS = {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}


def _old_mode(mode: str) -> str:
    # opset 7 Upsample documents "linear"; some exporters wrote "bilinear"
    return "linear" if mode in ("linear", "bilinear", "trilinear") else mode


def upsample_v7(ctx: ImportContext):
    scales = ctx.constant(np.asarray(ctx.attrs["scales"], dtype=np.float32))
    attrs = dict(_OLD_RESIZE_ATTRS, mode=_old_mode(ctx.attrs.get("mode", "nearest")))
    return ctx.emit("Resize", [ctx.inputs[0], None, scales], attrs)


def upsample_v9(ctx: ImportContext):
    attrs = dict(_OLD_RESIZE_ATTRS, mode=_old_mode(ctx.attrs.get("mode", "nearest")))
    return ctx.emit("Resize", [ctx.inputs[0], None, ctx.inputs[1]], attrs)


def resize_v11(ctx: ImportContext):
    # opset 11 requires roi and scales; an empty tensor stands for "not given" (exporters
    # keep writing empty tensors in later opsets too)
    inputs = list(ctx.inputs) + [None] * (4 - len(ctx.inputs))
    for i in (1, 2):
        c = ctx.const(i)
        if c is not None and c.size == 0:
            inputs[i] = None
    while inputs and inputs[-1] is None:
        inputs.pop()
    return ctx.emit("Resize", inputs, ctx.attrs)


def grid_sample_v16(ctx: ImportContext):
    renamed = {"bilinear": "linear", "bicubic": "cubic"}
    attrs = dict(ctx.attrs)
    mode = attrs.get("mode", "bilinear")
    attrs["mode"] = renamed.get(mode, mode)
    return ctx.emit("GridSample", ctx.inputs, attrs)


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Upsample": [(7, upsample_v7), (9, upsample_v9)],
    "Resize": [(10, upsample_v9), (11, resize_v11)],
    "GridSample": [(16, grid_sample_v16), (20, None)],
    "AffineGrid": (20, None),
    "CenterCropPad": (18, None),
    "NonMaxSuppression": (10, None),
}
