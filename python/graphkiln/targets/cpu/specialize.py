# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A copy of a graph with dynamic input dims replaced by the shapes of one run, types
re-inferred and shape computations folded away (the cpu target plans per input shape)."""

from __future__ import annotations

from ...ir import Graph, TensorType
from ...ir.clone import clone_graph
from ...passes import eliminate_dead_code, fold_constants
from ...passes.context import PassContext
from ...passes.manager import run_pipeline


def specialize(graph: Graph, shapes: tuple) -> Graph:
    copy = clone_graph(graph)
    for value, shape in zip(copy.inputs, shapes):
        t = value.type
        if not isinstance(t, TensorType):
            continue
        if t.dims is not None and len(t.dims) != len(shape):
            raise ValueError(f"input {value.name!r} has rank {len(t.dims)}, got shape {shape}")
        value.type = TensorType(t.dtype, tuple(int(d) for d in shape))
    fold_constants.refresh_types(copy)
    from ..ref.target import evaluate

    run_pipeline(copy, [fold_constants, eliminate_dead_code], PassContext(evaluate=evaluate),
                 trace=False)
    return copy
