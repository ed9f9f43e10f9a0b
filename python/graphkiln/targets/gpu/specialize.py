# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Plans per parameter value: small integer graph inputs that only feed parameter positions
(Reshape's shape, Slice's starts, a reduction's axes, ...) are folded in as constants when
a plan is built, like the input shapes are (targets/native/specialize.py). A run with other
values builds (and caches) another plan."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir import DType, Graph, Node, TensorType, Value
from ...ir.clone import clone_graph
from ...ir.schema import require_ops
from ...passes import eliminate_dead_code, fold_constants
from ...passes.context import PassContext
from ...passes.manager import run_pipeline
from ...passes.util import replace_many
from ..native.specialize import decompose_refused, unroll_small_loops

_REDUCTIONS = (
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
)
# op -> the input positions read as values when the plan is built
PARAMETERS = {
    "Reshape": (1,),
    "Expand": (1,),
    "Unsqueeze": (1,),
    "Squeeze": (1,),
    "Slice": (1, 2, 3, 4),
    "Split": (1,),
    "Tile": (1,),
    "Pad": (1, 2, 3),
    "ConstantOfShape": (0,),
    "Range": (0, 1, 2),
    "TopK": (1,),
    "OneHot": (1,),
    "Resize": (1, 2, 3),
    "CumSum": (1,),
    "CumProd": (1,),
    "CenterCropPad": (1,),
    "Trilu": (1,),
    **{op: (1,) for op in _REDUCTIONS},
    # host steps' shape inputs (host_steps.py; their cpu lowerings need them constant)
    "DFT": (1, 2),
    "STFT": (1, 3),
    "Col2Im": (1, 2),
    "MaxUnpool": (2,),
    "MelWeightMatrix": (0, 1, 2),
}
require_ops(PARAMETERS, "gpu/specialize.py PARAMETERS")
MAX_ELEMENTS = 64
# floats too: Resize's roi / scales, OneHot's depth and Range's bounds may be float inputs
_PARAMETER_DTYPES = (DType.i64, DType.i32, DType.f32, DType.f64, DType.f16)


def _reads_as_parameter(value: Value, node: Node) -> bool:
    if node.op == "Fused":
        body = node.attrs["body"]
        inner = [i for i, o in zip(body.inputs, node.inputs) if o is value]
        users = body.users()
        return all(_reads_as_parameter(i, u) for i in inner for u in users.get(i, []))
    positions = PARAMETERS.get(node.op, ())
    return all(i in positions for i, v in enumerate(node.inputs) if v is value)


def parameter_inputs(graph: Graph) -> list[int]:
    """Indices of the graph inputs that are small tensors read only as parameters."""
    users = graph.users()
    found = []
    for index, v in enumerate(graph.inputs):
        t = v.type
        if not (
            isinstance(t, TensorType)
            and t.dtype in _PARAMETER_DTYPES
            and t.dims is not None
            and all(isinstance(d, int) for d in t.dims)
            and int(np.prod(t.dims, dtype=np.int64)) <= MAX_ELEMENTS
        ):
            continue
        readers = users.get(v, [])
        if readers and v not in graph.outputs and all(_reads_as_parameter(v, n) for n in readers):
            found.append(index)
    return found


def specialize_values(
    graph: Graph,
    shapes: tuple,
    values: dict[int, np.ndarray],
    supports: Callable[[Node], bool] | None = None,
) -> Graph:
    """A copy with inputs `values` (index -> data) made constants, the other inputs given
    `shapes` (in their order), types re-inferred and what became constant folded; nodes
    `supports` refuses then decomposed where they can be, small Loops / Scans unrolled
    (native/specialize.py)."""
    copy = clone_graph(graph)
    mapping = {}
    for index, data in values.items():
        old = copy.inputs[index]
        const = copy.constant(np.asarray(data, old.type.dtype.numpy), old.name)
        copy.nodes.insert(0, copy.nodes.pop())
        mapping[old] = const
    replace_many(copy, mapping)
    copy.inputs = [v for i, v in enumerate(copy.inputs) if i not in values]
    for value, shape in zip(copy.inputs, shapes):
        t = value.type
        if isinstance(t, TensorType):
            value.type = TensorType(t.dtype, tuple(int(d) for d in shape))
    _inline_into_bodies(copy, set(mapping.values()))
    fold_constants.refresh_types(copy)
    if supports is not None:
        decompose_refused(copy, supports)
    from ..ref.target import evaluate

    context = PassContext(evaluate=evaluate)
    run_pipeline(copy, [fold_constants, eliminate_dead_code], context, trace=False)
    unroll_small_loops(copy, supports, context)
    return copy


def _inline_into_bodies(graph: Graph, constants: set[Value]) -> None:
    """Fused bodies read the new constants as constants too."""
    for node in graph.nodes:
        if node.op != "Fused":
            continue
        body = node.attrs["body"]
        keep_inner, keep_outer, mapping = [], [], {}
        for inner, outer in zip(body.inputs, node.inputs):
            if outer in constants:
                mapping[inner] = body.constant(outer.constant, inner.name)
                body.nodes.insert(0, body.nodes.pop())
            else:
                keep_inner.append(inner)
                keep_outer.append(outer)
        if mapping:
            replace_many(body, mapping)
            body.inputs, node.inputs = keep_inner, keep_outer
            fold_constants.refresh_types(body)
