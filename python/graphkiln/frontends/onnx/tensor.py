# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of shape and layout: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
Concat, Split, Expand, Tile, Pad, Shape, Size, ..."""

import numpy as np

from .context import ImportContext


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


def pad_v2(ctx: ImportContext):
    # Pad before 11: `pads` and `value` attributes -> inputs (value in the data's dtype)
    dtype = ctx.inputs[0].type.dtype.numpy
    inputs = [
        ctx.inputs[0],
        ctx.constant(np.array(ctx.attrs["pads"], dtype=np.int64)),
        ctx.constant(np.array(ctx.attrs.get("value", 0.0)).astype(dtype)),
    ]
    return ctx.emit(inputs=inputs, attrs={"mode": ctx.attrs.get("mode", "constant")})


def dropout_v7(ctx: ImportContext):
    # Dropout before 12: `ratio` attribute -> input (it only matters in training)
    data = ctx.inputs[0]
    ratio = ctx.constant(np.array(ctx.attrs.get("ratio", 0.5), dtype=data.type.dtype.numpy))
    if ctx.opset >= 10 or len(ctx.output_names) < 2 or not ctx.output_names[1]:
        return ctx.emit(inputs=[data, ratio], attrs={})
    # before opset 10 the mask has the data's type: ones, as inference keeps everything
    output = ctx.graph.add_node(
        "Dropout", [data, ratio], {}, output_names=ctx.output_names[:1], name=ctx.name
    ).outputs[0]
    one = np.ones(1, dtype=data.type.dtype.numpy)
    mask = ctx.graph.add_node(
        "ConstantOfShape",
        [ctx.add("Shape", data)],
        {"value": one},
        output_names=ctx.output_names[1:2],
        name=ctx.name,
    ).outputs[0]
    return [output, mask]


def depth_to_space_v1(ctx: ImportContext):
    return ctx.emit(attrs={"blocksize": ctx.attrs["blocksize"], "mode": "DCR"})


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Identity": (1, None),
    "Reshape": (5, None),
    "Flatten": (1, None),
    "Squeeze": [(1, axes_to_input), (13, None)],
    "Unsqueeze": [(1, axes_to_input), (13, None)],
    "Transpose": (1, None),
    "Concat": (4, None),
    "Split": (1, split),
    "Expand": (8, None),
    "Tile": (6, None),
    "Pad": [(2, pad_v2), (11, None)],
    "Shape": (1, None),
    "Size": (1, None),
    "Dropout": [(7, dropout_v7), (12, None)],
    "DepthToSpace": [(1, depth_to_space_v1), (11, None)],
    "SpaceToDepth": (1, None),
}
