# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The window attributes of a convolution or pooling step (strides, dilations, begin / end
pads) and its output sizes, from a node's attributes and its input's static dims (ONNX's
auto_pad and ceil_mode rules: ir/ops/conv.py's window_geometry)."""

from __future__ import annotations

from ...ir import Value
from ...ir.ops.conv import window_geometry
from .lower import static_dims


def window_attrs(x: Value, kernel, attrs, ceil_mode=False) -> tuple[dict, list]:
    n = len(kernel)
    strides = list(attrs.get("strides") or (1,) * n)
    dilations = list(attrs.get("dilations") or (1,) * n)
    begin, end, out = window_geometry(
        static_dims(x)[2:],
        kernel,
        strides,
        dilations,
        attrs.get("pads"),
        attrs.get("auto_pad") or "NOTSET",
        bool(ceil_mode),
    )
    return {
        "strides": strides,
        "dilations": dilations,
        "pads_begin": list(begin),
        "pads_end": list(end),
    }, out
