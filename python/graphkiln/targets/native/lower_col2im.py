# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Col2Im -> kernel "Col2Im" (src/cpu/col2im.cpp): cpu only, ref's arithmetic
(targets/ref/conv.py). float32 / float64 columns [N, C * prod(block), L], any number of
spatial dims; image_shape and block_shape must be constants at lowering (graph inputs of
them are planned per value: cpu/target.py) and become the kernel's `image` / `block`,
with dilations, strides and pads filled in to one per axis. `refusal(node)` says why the
kernel cannot run a node (None when it can)."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from .lower import LoweringContext, LoweringError, node_label
from .lower_support import supports


def col2im_geometry(node: Node) -> tuple[dict | None, str | None]:
    """(the Col2Im kernel's attrs, None), or (None, why the kernel cannot run `node`)."""
    x, y = node.inputs[0], node.outputs[0]
    if x.type.dtype not in (DType.f32, DType.f64) or y.type.dtype != x.type.dtype:
        return None, f"the input is {x.type.dtype.name}; the kernel takes f32 and f64"
    shapes = []
    for value, what in ((node.inputs[1], "image_shape"), (node.inputs[2], "block_shape")):
        if value.constant is None:
            return None, f"{what} is not a constant at lowering"
        shapes.append([int(v) for v in np.asarray(value.constant).reshape(-1)])
    image, block = shapes
    n = len(image)
    dilations = [int(v) for v in node.attrs.get("dilations") or [1] * n]
    strides = [int(v) for v in node.attrs.get("strides") or [1] * n]
    pads = [int(v) for v in node.attrs.get("pads") or [0] * (2 * n)]
    if n < 1 or len(block) != n or len(dilations) != n or len(strides) != n or len(pads) != 2 * n:
        return None, "image_shape, block_shape, dilations, strides (and pads twice) per axis"
    if min(image + block + dilations + strides) < 1 or min(pads) < 0:
        return None, "sizes, dilations and strides must be positive, pads not negative"
    counts = [
        (image[i] + pads[i] + pads[i + n] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1
        for i in range(n)
    ]
    taps = int(np.prod(block))
    dims = x.type.dims
    if min(counts) < 1 or len(dims) != 3 or dims[1] % taps or dims[2] != int(np.prod(counts)):
        return None, f"columns {dims} do not fit blocks {block} over the image {image}"
    if tuple(y.type.dims) != (dims[0], dims[1] // taps, *image):
        return None, f"the output dims {y.type.dims} are not [N, C, *{image}]"
    attrs = {"image": image, "block": block, "dilations": dilations, "strides": strides}
    attrs["pads"] = pads
    return attrs, None


def refusal(node: Node) -> str | None:
    """Why src/cpu/col2im.cpp cannot run `node`, or None."""
    return col2im_geometry(node)[1]


def _col2im_ok(node: Node, ctx=None) -> bool:
    return refusal(node) is None


@supports(_col2im_ok)
def lower_col2im(node: Node, ctx: LoweringContext) -> None:
    attrs, why = col2im_geometry(node)
    if why:
        raise LoweringError(
            f"the {ctx.target} target cannot run {node.op} {node_label(node)!r}: {why}"
        )
    ctx.emit("Col2Im", [ctx.input(node.inputs[0])], [ctx.output(node.outputs[0])], attrs, node.name)


LOWERINGS = {"Col2Im": lower_col2im}
