# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Function expansion: an ONNX op that graphkiln has no converter for, but that ONNX defines
by a function body (FunctionProto), is imported as the body's nodes, each through the normal
importer path, so it becomes ordinary graphkiln IR ops (a decomposition, not a delegation).

Hook, in `_Importer.node` where the op has no converter:

    found, converter = find_converter(op, opset)
    if not found:
        if expand_function(self, node, graph, scope, opset):
            return
        raise UnsupportedOperatorError(...)
"""

from __future__ import annotations

from typing import Any

import onnx
import onnx.defs

from ...errors import ModelError
from ...ir import Graph, TensorType, Value

# Bodies that expand into further functions nest; a bound keeps a self-referencing body from
# recursing without end.
MAX_DEPTH = 32


def function_body(node: onnx.NodeProto, opset: int,
                  input_types: list[onnx.TypeProto]) -> tuple[onnx.FunctionProto, Any] | None:
    """The ONNX function body defining `node` at `opset` and the op's schema, or None when
    ONNX defines no body. `input_types` (one per node input, empty TypeProto when unknown or
    omitted) feed context-dependent bodies, which ONNX builds from the node and its types."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except onnx.defs.SchemaError:
        return None
    data = b""
    # a body is written for one opset of its op: take the newest not after the model's
    static = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if schema.has_function and static:
        data = schema.get_function_with_opset_version(max(static))
    elif schema.has_context_dependent_function and dependent:
        data = schema.get_context_dependent_function_with_opset_version(
            max(dependent), node.SerializeToString(),
            [t.SerializeToString() for t in input_types])
    if not data:
        return None
    function = onnx.FunctionProto()
    function.ParseFromString(data)
    return function, schema


def type_proto(value: Value | None) -> onnx.TypeProto:
    """A graphkiln value's type as ONNX sees it (an empty TypeProto when unknown)."""
    proto = onnx.TypeProto()
    if value is None or not isinstance(value.type, TensorType):
        return proto
    t = value.type
    try:
        elem = t.dtype.onnx
    except KeyError:
        return proto
    tensor = proto.tensor_type
    tensor.elem_type = elem
    if t.dims is not None:
        shape = tensor.shape
        shape.SetInParent()  # rank 0 still has a (empty) shape
        for d in t.dims:
            dim = shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            else:
                dim.dim_param = d
    return proto


def expand_function(importer, node: onnx.NodeProto, graph: Graph, scope: dict[str, Value],
                    opset: int, depth: int = 0) -> bool:
    """Import `node` as its ONNX function body into `graph`, binding its outputs in `scope`.
    `importer` is the `_Importer` (its `node` method imports each body node and its
    `opsets` are swapped for the body's while it runs). False when ONNX defines no body."""
    inputs = [scope.get(name) if name else None for name in node.input]
    found = function_body(node, opset, [type_proto(v) for v in inputs])
    if found is None:
        return False
    function, schema = found
    defaults = {name: a.default_value for name, a in schema.attributes.items()
                if a.default_value.type != onnx.AttributeProto.UNDEFINED}
    import_function_body(importer, node, function, graph, scope, defaults, depth)
    return True


def import_function_body(importer, node: onnx.NodeProto, function: onnx.FunctionProto,
                         graph: Graph, scope: dict[str, Value],
                         defaults: dict[str, onnx.AttributeProto] | None = None,
                         depth: int = 0) -> None:
    """Import `function`'s nodes in place of `node` (formal inputs bound to the node's actual
    inputs, attribute references resolved to the node's attributes, else the function's or
    `defaults`' values), then bind the node's outputs to the body's results in `scope`."""
    label = node.name or (node.output[0] if node.output else node.op_type)
    if depth > MAX_DEPTH:
        raise ModelError(f"node {label!r} ({node.op_type}): function bodies nest deeper than "
                         f"{MAX_DEPTH} levels")
    # the body's own scope: formal parameters only (a body sees nothing else)
    local: dict[str, Value] = {}
    missing = set()
    for i, formal in enumerate(function.input):
        actual = node.input[i] if i < len(node.input) else ""
        if actual:
            if actual not in scope:
                raise ModelError(f"node {label!r} ({node.op_type}) reads {actual!r}, which "
                                 "no node, input or initializer defines")
            local[formal] = scope[actual]
        else:
            missing.add(formal)  # an omitted optional input: reads of it become omitted too
    attrs = dict(defaults or {})
    for a in function.attribute_proto:
        attrs[a.name] = a
    for a in node.attribute:
        attrs[a.name] = a

    saved = importer.opsets
    body_opsets = dict(saved)
    for entry in function.opset_import:
        body_opsets[entry.domain] = entry.version
    importer.opsets = body_opsets
    try:
        for body_node in function.node:
            resolved = _resolve(body_node, attrs, missing)
            _import_body_node(importer, resolved, graph, local, depth + 1)
    finally:
        importer.opsets = saved

    for formal, actual in zip(function.output, node.output):
        if not actual:
            continue
        if formal not in local:
            raise ModelError(f"node {label!r} ({node.op_type}): its function body does not "
                             f"produce output {formal!r}")
        scope[actual] = local[formal]


def _import_body_node(importer, node: onnx.NodeProto, graph: Graph, local: dict[str, Value],
                      depth: int) -> None:
    """A body node goes through the importer; one that is itself a function without a
    converter expands here too, so nesting is bounded by `depth`."""
    from .ops_table import find_converter

    opset = importer.opsets.get("", importer.opsets.get("ai.onnx"))
    if node.domain in ("", "ai.onnx") and not find_converter(node.op_type, opset)[0]:
        if expand_function(importer, node, graph, local, opset, depth):
            return
    importer.node(fill_subgraph_input_types(node, local), graph, local)


def fill_subgraph_input_types(node: onnx.NodeProto, scope: dict[str, Value]) -> onnx.NodeProto:
    """Function bodies (and models made from them) may leave the inputs of a Loop / Scan body
    untyped; the importer needs at least their element type, which is the one of the outer
    value each is bound to. Returns `node`, or a filled-in copy when something was missing."""
    if node.op_type not in ("Loop", "Scan"):
        return node
    index = next((i for i, a in enumerate(node.attribute) if a.name == "body"), None)
    if index is None or all(v.type.WhichOneof("value") for v in node.attribute[index].g.input):
        return node
    node = _copy(node)
    body = node.attribute[index].g
    # Loop body: (iteration, condition, states...) bound to node inputs (M, cond, states...);
    # Scan body: (states..., scan slices...) bound to node inputs in the same order
    fixed = {0: onnx.TensorProto.INT64, 1: onnx.TensorProto.BOOL} if node.op_type == "Loop" else {}
    for i, formal in enumerate(body.input):
        if formal.type.WhichOneof("value") is not None:
            continue
        elem = fixed.get(i)
        if elem is None and i < len(node.input) and node.input[i] in scope:
            t = scope[node.input[i]].type
            if isinstance(t, TensorType):
                elem = t.dtype.onnx
        if elem is not None:
            formal.type.tensor_type.elem_type = elem
    return node


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out
