# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""NonMaxSuppression -> kernel "NonMaxSuppression" (src/cpu/nms.cpp): float32 boxes and
scores, max_output_boxes_per_class (i64) and the thresholds (f32) read at run time. Its
output's row count is decided by the run: the kernel writes into a slot of the bound
(batches x classes x min(max_output_boxes_per_class, boxes) for a constant limit, else
x boxes), rows after the selected ones -1, and the cpu segment cuts the array there
(LoweringContext.bounded_output, native/bounded.py bounded_rows). So the output must leave the plan:
a graph output, or read by nodes that run on ref (fallback='ref'); a native node reading it
is refused for its dynamic dims."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from .lower import LoweringContext, static_dims
from .lower_support import supports


def _scalar(value, dtype) -> bool:
    t = value.type
    return (
        t.dtype == dtype
        and t.dims is not None
        and all(isinstance(d, int) for d in t.dims)
        and int(np.prod(t.dims, dtype=np.int64)) >= 1
    )


def _nms_ok(node: Node, ctx=None) -> bool:
    boxes, scores = node.inputs[0].type, node.inputs[1].type
    if boxes.dtype != DType.f32 or scores.dtype != DType.f32:
        return False
    if len(boxes.dims) != 3 or len(scores.dims) != 3 or boxes.dims[2] != 4:
        return False
    if scores.dims[0] != boxes.dims[0] or scores.dims[2] != boxes.dims[1]:
        return False
    if node.outputs[0].type.dtype != DType.i64:
        return False
    optional = list(node.inputs[2:5])
    kinds = (DType.i64, DType.f32, DType.f32)
    return all(v is None or _scalar(v, k) for v, k in zip(optional, kinds))


@supports(_nms_ok)
def lower_nms(node: Node, ctx: LoweringContext) -> None:
    batch, classes, boxes = static_dims(node.inputs[1])
    limit = node.inputs[2] if len(node.inputs) > 2 else None
    if limit is None:
        per_class = 0
    elif limit.constant is not None:
        per_class = min(max(int(np.asarray(limit.constant).reshape(-1)[0]), 0), boxes)
    else:
        per_class = boxes
    ins = [ctx.input(v) for v in node.inputs]
    out = ctx.bounded_output(node.outputs[0], (batch * classes * per_class, 3))
    attrs = {"center_point_box": int(node.attrs.get("center_point_box", 0))}
    ctx.emit("NonMaxSuppression", ins, [out], attrs, node.name)


lower_nms.bounded_outputs = True  # its output's rows: lower_support.node_supported

LOWERINGS = {"NonMaxSuppression": lower_nms}
