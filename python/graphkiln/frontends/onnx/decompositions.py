# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Decompositions: an ONNX op that graphkiln imports as one IR node, but that ONNX also
defines by a function body, carries that body as `Node.decomposition` (ir/decomposition.py),
so that a native target without a kernel for the node (or for its attributes or dtypes)
runs the body instead (passes/inline_decompositions.py). ref ignores it: it runs the op.

The body is imported lazily, the first time a pass asks for it: the importer keeps the ONNX
node, its input types and the opsets, which costs nothing measurable, while the bodies of
all LayerNormalizations of a transformer would cost milliseconds each. The body is the one
ONNX defines at the model's opset (functions.function_body), so it computes what the op
computes at that opset.

Nodes of If / Loop / Scan bodies get one too: no native target lowers them there, but an
If on a constant is replaced by its branch's nodes (passes/inline_constant_branches.py, as
AffineGrid's body needs), which then are nodes of the graph. A saved program keeps the
decompositions of top-level graphs' nodes only (serialize/encode.py)."""

from __future__ import annotations

from collections.abc import Callable

import onnx

from ...errors import GraphkilnError
from ...ir import Decomposition, Graph, Node, Value
from .functions import function_body, import_function_body, type_proto

# Ops ONNX defines by a function body whose native coverage is partial: a target lacks the
# kernel (cpu: AffineGrid, CenterCropPad, the losses, SwiGLU, the windows, ...; gpu also
# GroupNormalization, RotaryEmbedding, DynamicQuantizeLinear, SpaceToDepth, ...) or refuses
# some attributes or dtypes (Attention's softcap / qk output modes / float16, the
# normalizations' stash_type and float16, ...). Elementwise ops with bodies (Relu, Gelu,
# Softmax, ...) are left out: their kernels take every dtype their bodies would run in.
# LinearAttention's body is a Scan over the sequence, which the native targets unroll per
# plan when small (passes/unroll_loops.py).
DECOMPOSED = frozenset(
    {
        "AffineGrid",
        "Attention",
        "BlackmanWindow",
        "CastLike",
        "CausalConvWithState",
        "CenterCropPad",
        "DepthToSpace",
        "DynamicQuantizeLinear",
        "GroupNormalization",
        "HammingWindow",
        "HannWindow",
        "LayerNormalization",
        "LinearAttention",
        "MeanVarianceNormalization",
        "NegativeLogLikelihoodLoss",
        "RMSNormalization",
        "RotaryEmbedding",
        "SoftmaxCrossEntropyLoss",
        "SpaceToDepth",
        "SwiGLU",
    }
)


def attach_decomposition(
    new_importer: Callable,
    proto: onnx.NodeProto,
    opset: int,
    added: list[Node],
    inputs: list[Value | None],
) -> None:
    """Give the node of `added` (the IR nodes importing `proto`) that is `proto` one to one
    (same op, the same inputs) a lazy decomposition: the ONNX body of `proto` at `opset`,
    imported by `new_importer()` (a fresh importer with the model's opsets). Nothing when
    the converter wrote the op otherwise (another op, other inputs)."""
    nodes = [n for n in added if n.op == proto.op_type]
    if len(nodes) != 1:
        return
    node = nodes[0]
    if len(node.inputs) != len(inputs) or any(a is not b for a, b in zip(node.inputs, inputs)):
        return
    present_outputs = [i for i, v in enumerate(node.outputs) if v is not None]
    if any(i >= len(proto.output) or not proto.output[i] for i in present_outputs):
        return
    node_proto = onnx.NodeProto()
    node_proto.CopyFrom(proto)
    input_types = [None if v is None else v.type for v in inputs]
    output_names = [proto.output[i] for i in present_outputs]

    def build() -> Graph | None:
        return _import_body(new_importer, node_proto, opset, input_types, output_names)

    node.decomposition = Decomposition(build)


def _import_body(
    new_importer: Callable,
    proto: onnx.NodeProto,
    opset: int,
    input_types: list,
    output_names: list[str],
) -> Graph | None:
    """The body of `proto` as a standalone Graph (inputs: its present inputs, outputs: its
    present outputs), or None where ONNX defines none or it does not import (an op of the
    body graphkiln lacks: then the node simply has no decomposition)."""
    names = list(proto.input[: len(input_types)])
    types = [type_proto(t) if name else onnx.TypeProto() for name, t in zip(names, input_types)]
    found = function_body(proto, opset, types)
    if found is None:
        return None
    function, schema = found
    defaults = {
        name: a.default_value
        for name, a in schema.attributes.items()
        if a.default_value.type != onnx.AttributeProto.UNDEFINED
    }
    body = Graph(f"{proto.op_type}_decomposition")
    scope: dict[str, Value] = {}
    for name, t in zip(names, input_types):
        if name:
            scope[name] = body.add_input(name, t)
    try:
        import_function_body(new_importer(), proto, function, body, scope, defaults)
    except GraphkilnError:
        return None
    body.outputs = [scope[name] for name in output_names]
    return body
