# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of control flow with subgraphs: If, Loop, Scan."""

from ...errors import ModelError, UnsupportedOperatorError
from ...ir import DType, Graph, OptionalType, SequenceType, TensorType, fresh_dim
from .context import ImportContext


def loosened(t):
    """`t` with every dim fresh: the type of a value that may change shape between iterations."""
    if isinstance(t, TensorType):
        return TensorType(t.dtype, None if t.dims is None else tuple(fresh_dim() for _ in t.dims))
    if isinstance(t, (SequenceType, OptionalType)):
        return type(t)(loosened(t.elem))
    return t


def _sliced(t, axis: int):
    """The type of one slice of `t` along `axis`."""
    if not isinstance(t, TensorType) or not t.dims:
        return t
    axis %= len(t.dims)
    return TensorType(t.dtype, t.dims[:axis] + t.dims[axis + 1 :])


def scan_8(ctx: ImportContext):
    """Opset 8 scans every batch row (axis 0) separately along axis 1. That is an opset-9 Scan
    over the batch whose body runs the original Scan on one row (its sequence axis is then 0)."""
    sequence_lens, states_and_inputs = ctx.input(0), list(ctx.inputs[1:])
    if sequence_lens is not None:
        raise UnsupportedOperatorError(
            "Scan",
            ctx.name,
            "",
            ctx.opset,
            "opset-8 Scan with a sequence_lens input (per-row lengths) is not supported; "
            "leave it empty or use the opset-9 form",
        )
    body: Graph = ctx.attrs["body"]
    num_scan = ctx.attrs["num_scan_inputs"]
    row = Graph("scan_batch_row", ctx.graph)
    row_inputs = [row.add_input(f"{v.name}_row", _sliced(v.type, 0)) for v in states_and_inputs]
    body.parent = row
    inner_attrs = {"body": body, "num_scan_inputs": num_scan}
    if ctx.attrs.get("directions"):
        inner_attrs["scan_input_directions"] = ctx.attrs["directions"]
    inner = row.add_node(
        "Scan",
        row_inputs,
        inner_attrs,
        output_names=[f"{v.name}_row" for v in body.outputs],
        name=ctx.name,
    )
    row.outputs = list(inner.outputs)
    return ctx.emit(
        "Scan", states_and_inputs, {"body": row, "num_scan_inputs": len(states_and_inputs)}
    )


def _type(v):
    return None if v is None else v.type


def loop_body_inputs(inputs, attrs, opset):
    return [TensorType(DType.i64, ()), TensorType(DType.bool, ())] + [
        loosened(_type(v)) for v in inputs[2:]
    ]


def scan_body_inputs(inputs, attrs, opset):
    num_scan = attrs.get("num_scan_inputs", 0)
    if not isinstance(num_scan, int) or not 0 <= num_scan <= len(inputs):
        raise ModelError(
            f"Scan: num_scan_inputs={num_scan!r}, but the node has {len(inputs)} inputs"
        )
    if opset < 9:  # inputs: sequence_lens, then [batch, ...] states and [batch, seq, ...] inputs
        types = [None if v is None else _sliced(v.type, 0) for v in inputs[1:]]
        axes = (0,) * num_scan
    else:
        types = [_type(v) for v in inputs]
        axes = attrs.get("scan_input_axes") or (0,) * num_scan
    num_states = len(types) - num_scan
    states = [loosened(t) for t in types[:num_states]]
    return states + [_sliced(t, a) for t, a in zip(types[num_states:], axes)]


# (ONNX op, graph attribute) -> f(node inputs, other attributes, opset) -> types of the
# subgraph's inputs, for subgraphs that leave them untyped (function expansions do)
SUBGRAPH_INPUTS = {
    ("Loop", "body"): loop_body_inputs,
    ("Scan", "body"): scan_body_inputs,
}

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "If": (7, None),
    # opsets 11, 13 and 16 only widen what may be carried (sequences, optionals)
    "Loop": (7, None),
    "Scan": [(8, scan_8), (9, None)],
}
