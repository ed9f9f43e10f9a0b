# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""LpPool -> kernel "LpPool" (src/cpu/lp_pool.cpp): float32, 1 to 3 spatial dims; the
window geometry (auto_pad, pads, ceil_mode, dilations) is computed here as for the other
pools and padded to three spatial dims."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext, static_dims
from .window_attrs import window_attrs as _geometry
from .lower_support import supports


def _lp_ok(node: Node, ctx=None) -> bool:
    x = node.inputs[0]
    if x.type.dtype != DType.f32 or node.outputs[0].type.dtype != DType.f32:
        return False
    rank = len(x.type.dims)
    kernel = node.attrs.get("kernel_shape") or []
    return 3 <= rank <= 5 and len(kernel) == rank - 2 and float(node.attrs.get("p", 2)) > 0


@supports(_lp_ok)
def lower_lp_pool(node: Node, ctx: LoweringContext) -> None:
    x = node.inputs[0]
    kernel = list(node.attrs["kernel_shape"])
    geo, out = _geometry(x, kernel, node.attrs, node.attrs.get("ceil_mode", 0))
    pad = 3 - len(kernel)
    front = lambda values, fill: [fill] * pad + [int(v) for v in values]  # noqa: E731
    in_dims = static_dims(x)[2:]
    if list(static_dims(node.outputs[0])[2:]) != [int(o) for o in out]:
        from ..native.lower import LoweringError

        raise LoweringError(f"LpPool {node.name!r}: output dims differ from the window geometry")
    attrs = {
        "p": float(node.attrs.get("p", 2)),
        "kernel": front(kernel, 1),
        "strides": front(geo["strides"], 1),
        "dilations": front(geo["dilations"], 1),
        "pads_begin": front(geo["pads_begin"], 0),
        "in_dims": front(in_dims, 1),
        "out_dims": front(out, 1),
    }
    ctx.emit("LpPool", [ctx.input(x)], [ctx.output(node.outputs[0])], attrs, node.name)


LOWERINGS = {"LpPool": lower_lp_pool}
