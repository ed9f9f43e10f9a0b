# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX importers of sequence and optional values: Sequence*, SplitToSequence, ConcatFromSequence,
Optional*."""

from ...ir import DType, SequenceType
from .context import ImportContext
from .control import loosened


def sequence_empty(ctx: ImportContext):
    # dtype is an ONNX element type code; float when absent
    code = ctx.attrs.get("dtype")
    return ctx.emit(attrs={} if code is None else {"dtype": DType.from_onnx(code)})


def optional(ctx: ImportContext):
    # `type` arrives as an IR value type; the IR keeps it in its text form
    attrs = dict(ctx.attrs)
    if attrs.get("type") is not None:
        attrs["type"] = str(attrs["type"])
    return ctx.emit(attrs=attrs)


def sequence_map_body_inputs(inputs, attrs, opset):
    # the body sees one element of each sequence input and tensor inputs whole
    types = [None if v is None else v.type for v in inputs]
    return [loosened(t.elem) if isinstance(t, SequenceType) else t for t in types]


# (ONNX op, graph attribute) -> f(node inputs, other attributes, opset) -> types of the
# subgraph's inputs, for subgraphs that leave them untyped
SUBGRAPH_INPUTS = {
    ("SequenceMap", "body"): sequence_map_body_inputs,
}

# ONNX op name -> (first opset handled, converter or None for a one-to-one copy)
OPS = {
    "SequenceConstruct": (11, None),
    "SequenceEmpty": (11, sequence_empty),
    "SequenceAt": (11, None),
    "SequenceInsert": (11, None),
    "SequenceErase": (11, None),
    "SequenceLength": (11, None),
    "SplitToSequence": (11, None),
    "ConcatFromSequence": (11, None),
    "SequenceMap": (17, None),
    # opset 18 lets OptionalHasElement / OptionalGetElement take plain tensors and sequences
    "Optional": (15, optional),
    "OptionalHasElement": (15, None),
    "OptionalGetElement": (15, None),
}
