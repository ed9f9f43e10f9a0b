# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of Softmax, LogSoftmax, Hardmax and the losses built on them."""

import numpy as np

from ...ir import TensorType
from .context import ImportContext


def flattened_to_single_axis(ctx: ImportContext):
    """Before opset 13 these ops flattened the input to 2-D at `axis` (default 1) and
    normalized each row; the IR normalizes along one axis only. When at most one of the
    dims from `axis` on is not 1, the two agree on that dim; otherwise the node becomes
    reshape to 2-D -> op along axis 1 -> reshape back."""
    x = ctx.inputs[0]
    axis = int(ctx.attrs.get("axis", 1))
    dims = x.type.dims if isinstance(x.type, TensorType) else None
    if dims is not None and len(dims) == 0:
        return ctx.emit(attrs={"axis": -1})
    if dims is not None:
        axis %= len(dims)
        wide = [i for i, d in enumerate(dims[axis:]) if d != 1]
        if len(wide) <= 1:
            return ctx.emit(attrs={"axis": axis + (wide[0] if wide else 0)})
    static = dims is not None and all(isinstance(d, int) and d > 0 for d in dims)
    if static:
        rows = int(np.prod(dims[:axis], dtype=np.int64))
        flat = ctx.add("Reshape", x, ctx.constant(np.array([rows, -1], dtype=np.int64)))
        original_shape = ctx.constant(np.array(dims, dtype=np.int64))
    else:
        flat = ctx.add("Flatten", x, axis=axis)
        original_shape = ctx.add("Shape", x)
    normalized = ctx.add(ctx.op_type, flat, axis=1)
    return ctx.emit("Reshape", [normalized, original_shape], {})


# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "Softmax": [(7, flattened_to_single_axis), (13, None)],
    "LogSoftmax": [(7, flattened_to_single_axis), (13, None)],
    "Hardmax": [(7, flattened_to_single_axis), (13, None)],
    "NegativeLogLikelihoodLoss": (12, None),
    "SoftmaxCrossEntropyLoss": (12, None),
}
