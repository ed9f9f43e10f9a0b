# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Det -> kernel "Det" (src/cpu/det.cpp): float32 / float64 [..., M, M], LU with partial
pivoting in double per matrix."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext
from .lower_support import supports


def _det_ok(node: Node, ctx=None) -> bool:
    t = node.inputs[0].type
    return t.dtype in (DType.f32, DType.f64) and len(t.dims) >= 2 and t.dims[-1] == t.dims[-2]


@supports(_det_ok)
def lower_det(node: Node, ctx: LoweringContext) -> None:
    ctx.emit("Det", [ctx.input(node.inputs[0])], [ctx.output(node.outputs[0])], {}, node.name)


LOWERINGS = {"Det": lower_det}
