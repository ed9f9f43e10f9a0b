# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of shape and layout: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Expand, Tile, Pad, Shape, Size, ..."""

import numpy as np

from .context import ImportContext


def reshape_v1(ctx: ImportContext):
    shape = ctx.constant(np.array(ctx.attrs["shape"], dtype=np.int64))
    return ctx.emit(inputs=[ctx.inputs[0], shape], attrs={})


def axes_to_input(ctx: ImportContext):
    # Squeeze/Unsqueeze before opset 13: `axes` attribute -> second input
    attrs = dict(ctx.attrs)
    axes = attrs.pop("axes", None)
    inputs = [ctx.inputs[0]]
    if axes is not None:
        inputs.append(ctx.constant(np.array(axes, dtype=np.int64)))
    return ctx.emit(inputs=inputs, attrs=attrs)


def split(ctx: ImportContext):
    # `split` attribute (before 13) -> input; an equal split names its part count, which
    # the IR form keeps in num_outputs (the kernel does not see how many outputs there are)
    attrs = dict(ctx.attrs)
    sizes = attrs.pop("split", None)
    inputs = list(ctx.inputs[:2])
    if sizes is not None:
        inputs = [inputs[0], ctx.constant(np.array(sizes, dtype=np.int64))]
    if len(inputs) < 2 and attrs.get("num_outputs") is None:
        attrs["num_outputs"] = len(ctx.output_names)
    return ctx.emit(inputs=inputs, attrs=attrs)


def tile_v1(ctx: ImportContext):
    # Tile-1: repeat `tiles` times along axis `axis` (both scalar inputs)
    tiles, axis = ctx.const(1), ctx.const(2)
    if tiles is None or axis is None:
        raise ValueError("Tile-1 needs constant tiles and axis")
    rank = ctx.inputs[0].type.rank
    repeats = np.ones(rank, dtype=np.int64)
    repeats[int(axis.reshape(-1)[0])] = int(tiles.reshape(-1)[0])
    return ctx.emit(inputs=[ctx.inputs[0], ctx.constant(repeats)], attrs={})


def pad_v2(ctx: ImportContext):
    attrs = dict(ctx.attrs)
    pads = attrs.pop("pads", None)
    if pads is None:
        pads = attrs.pop("paddings")
    value = attrs.pop("value", 0.0)
    dtype = ctx.inputs[0].type.dtype.numpy
    inputs = [ctx.inputs[0], ctx.constant(np.array(pads, dtype=np.int64)),
              ctx.constant(np.array(value).astype(dtype))]
    return ctx.emit(inputs=inputs, attrs={"mode": attrs.get("mode", "constant")})


def dropout_v1(ctx: ImportContext):
    # is_test / ratio attributes only matter in training; inference is identity
    return ctx.emit(inputs=ctx.inputs[:1], attrs={})


def depth_to_space_v1(ctx: ImportContext):
    return ctx.emit(attrs={"blocksize": ctx.attrs["blocksize"], "mode": "DCR"})


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Identity": (1, None),
    "Reshape": [(1, reshape_v1), (5, None)],
    "Flatten": (1, None),
    "Squeeze": [(1, axes_to_input), (13, None)],
    "Unsqueeze": [(1, axes_to_input), (13, None)],
    "Transpose": (1, None),
    "Concat": (4, None),
    "Split": (1, split),
    "Expand": (8, None),
    "Tile": [(1, tile_v1), (6, None)],
    "Pad": [(1, pad_v2), (11, None)],
    "Shape": (1, None),
    "Size": (1, None),
    "Dropout": [(1, dropout_v1), (12, None)],
    "DepthToSpace": [(1, depth_to_space_v1), (11, None)],
    "SpaceToDepth": (1, None),
}
