# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Function expansion: an ONNX op that graphkiln has no converter for, but that ONNX defines
by a function body (FunctionProto), is imported as the body's nodes, each through the normal
importer path, so it becomes ordinary graphkiln IR ops (a decomposition, not a delegation).

Hook, at the top of `_Importer.node` (before the default-domain check, so that function ops
of other ONNX domains such as ai.onnx.preview's FlexAttention expand too):

    opset = self.opsets.get("", self.opsets.get("ai.onnx"))
    if domain not in DEFAULT_DOMAINS or not find_converter(op, opset)[0]:
        if expand_function(self, node, graph, scope, opset):
            return
    ... (the existing checks, which raise UnsupportedOperatorError)
"""

from __future__ import annotations

from typing import Any

import onnx
import onnx.defs

from ...errors import ModelError
from ...ir import Graph, OptionalType, SequenceType, TensorType, Value
from .ops_table import find_converter

DEFAULT_DOMAINS = ("", "ai.onnx")

# Bodies that expand into further functions nest; a bound keeps a self-referencing body from
# recursing without end.
MAX_DEPTH = 32


def function_body(
    node: onnx.NodeProto, opset: int, input_types: list[onnx.TypeProto]
) -> tuple[onnx.FunctionProto, Any] | None:
    """The ONNX function body defining `node` at `opset` and the op's schema, or None when
    ONNX defines no body (or, for a context-dependent body, a present input's type is
    unknown). `input_types` (one per node input, an empty TypeProto where omitted) feed
    context-dependent bodies, which ONNX builds from the node and its types."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except (onnx.defs.SchemaError, TypeError):  # TypeError: an opset beyond a C int
        return None
    data = b""
    # a body is written for one opset of its op: take the newest not after the model's
    static = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if schema.has_function and static:
        data = schema.get_function_with_opset_version(max(static))
    elif schema.has_context_dependent_function and dependent:
        # ONNX's body builders read the type of every present input (some crash without it)
        if any(name and t.WhichOneof("value") is None for name, t in zip(node.input, input_types)):
            return None
        data = schema.get_context_dependent_function_with_opset_version(
            max(dependent), node.SerializeToString(), [t.SerializeToString() for t in input_types]
        )
    if not data:
        return None
    function = onnx.FunctionProto()
    function.ParseFromString(data)
    return function, schema


def type_proto(value_type) -> onnx.TypeProto:
    """A graphkiln value type as ONNX sees it (an empty TypeProto when unknown)."""
    proto = onnx.TypeProto()
    if isinstance(value_type, SequenceType):
        elem = type_proto(value_type.elem)
        if elem.WhichOneof("value") is not None:
            proto.sequence_type.elem_type.CopyFrom(elem)
        return proto
    if isinstance(value_type, OptionalType):
        elem = type_proto(value_type.elem)
        if elem.WhichOneof("value") is not None:
            proto.optional_type.elem_type.CopyFrom(elem)
        return proto
    if not isinstance(value_type, TensorType):
        return proto
    tensor = proto.tensor_type
    tensor.elem_type = value_type.dtype.onnx
    if value_type.dims is not None:
        tensor.shape.SetInParent()  # rank 0 still has a (empty) shape
        for d in value_type.dims:
            dim = tensor.shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            else:
                dim.dim_param = d
    return proto


def expand_function(
    importer,
    node: onnx.NodeProto,
    graph: Graph,
    scope: dict[str, Value],
    opset: int,
    depth: int = 0,
) -> bool:
    """Import `node` as its ONNX function body into `graph`, binding its outputs in `scope`.
    `opset` is the model's default-domain opset (a node of another ONNX domain, such as
    ai.onnx.preview, is looked up at the model's opset of that domain).
    `importer` is the `_Importer` (its `node` method imports each body node and its
    `opsets` are swapped for the body's while it runs). False when ONNX defines no body."""
    if node.domain not in DEFAULT_DOMAINS:  # e.g. ai.onnx.preview: the model's opset of it
        opset = importer.opsets.get(node.domain)
        if opset is None:
            return False
    types = [
        type_proto(scope[name].type if name in scope else None) if name else onnx.TypeProto()
        for name in node.input
    ]
    found = function_body(node, opset, types)
    if found is None:
        return False
    function, schema = found
    defaults = {
        name: a.default_value
        for name, a in schema.attributes.items()
        if a.default_value.type != onnx.AttributeProto.UNDEFINED
    }
    import_function_body(importer, node, function, graph, scope, defaults, depth)
    return True


def import_function_body(
    importer,
    node: onnx.NodeProto,
    function: onnx.FunctionProto,
    graph: Graph,
    scope: dict[str, Value],
    defaults: dict[str, onnx.AttributeProto] | None = None,
    depth: int = 0,
) -> None:
    """Import `function`'s nodes in place of `node` (formal inputs bound to the node's actual
    inputs, attribute references resolved to the node's attributes, else the function's or
    `defaults`' values), then bind the node's outputs to the body's results in `scope`."""
    label = node.name or (node.output[0] if node.output else node.op_type)
    if depth > MAX_DEPTH:
        raise ModelError(
            f"node {label!r} ({node.op_type}): function bodies nest deeper than {MAX_DEPTH} levels"
        )
    # Body names are renamed so that IR names neither collide with the model's (which would
    # rename the model's values) nor hide what they came from: the node's outputs keep the
    # model's names, every other body name becomes "<node>/<name>".
    rename = {o: f"{label}/{o}" for n in function.node for o in n.output if o}
    rename.update({formal: f"{label}/{formal}" for formal in function.input})
    for formal, actual in zip(function.output, node.output):
        if actual and formal in rename:
            rename[formal] = actual

    # the body's own scope: formal parameters only (a body sees nothing else)
    local: dict[str, Value] = {}
    missing = set()
    for i, formal in enumerate(function.input):
        actual = node.input[i] if i < len(node.input) else ""
        if actual:
            if actual not in scope:
                raise ModelError(
                    f"node {label!r} ({node.op_type}) reads {actual!r}, which "
                    "no node, input or initializer defines"
                )
            local[rename[formal]] = scope[actual]
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
    importer.function_depth += 1  # resolved attribute references keep the caller's kinds
    try:
        for body_node in function.node:
            resolved = _resolve(body_node, attrs, missing, rename)
            _import_body_node(importer, resolved, graph, local, depth + 1)
    finally:
        importer.opsets = saved
        importer.function_depth -= 1

    for formal, actual in zip(function.output, node.output):
        if not actual:
            continue
        key = rename.get(formal, formal)
        if key not in local:
            raise ModelError(
                f"node {label!r} ({node.op_type}): its function body does not "
                f"produce output {formal!r}"
            )
        scope[actual] = local[key]


def _import_body_node(
    importer, node: onnx.NodeProto, graph: Graph, local: dict[str, Value], depth: int
) -> None:
    """A body node goes through the importer; one that is itself a function without a
    converter expands here too, so nesting is bounded by `depth`."""
    opset = importer.opsets.get("", importer.opsets.get("ai.onnx"))
    if node.domain not in DEFAULT_DOMAINS or not find_converter(node.op_type, opset)[0]:
        if expand_function(importer, node, graph, local, opset, depth):
            return
    importer.node(node, graph, local)


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


def _resolve(
    node: onnx.NodeProto,
    attrs: dict[str, onnx.AttributeProto],
    missing: set[str],
    rename: dict[str, str],
) -> onnx.NodeProto:
    """A copy of a body node with `ref_attr_name` attributes replaced by the referenced value
    (dropped when it has none), reads of omitted formal inputs emptied and body values
    renamed by `rename`; subgraphs (which may read body values) too."""
    out = _copy(node)
    for i, name in enumerate(out.input):
        out.input[i] = "" if name in missing else rename.get(name, name)
    for i, name in enumerate(out.output):
        out.output[i] = rename.get(name, name)
    kept = []
    for a in out.attribute:
        value = onnx.AttributeProto()
        if a.ref_attr_name:
            if a.ref_attr_name not in attrs:
                continue  # a reference to an absent attribute: the attribute is absent
            value.CopyFrom(attrs[a.ref_attr_name])
            value.name = a.name
            value.ref_attr_name = ""
        else:
            value.CopyFrom(a)
            if value.HasField("g"):
                _resolve_graph(value.g, attrs, missing, rename)
            for g in value.graphs:
                _resolve_graph(g, attrs, missing, rename)
        kept.append(value)
    del out.attribute[:]
    out.attribute.extend(kept)
    return out


def _resolve_graph(
    graph: onnx.GraphProto,
    attrs: dict[str, onnx.AttributeProto],
    missing: set[str],
    rename: dict[str, str],
) -> None:
    # names a subgraph defines shadow the body's names of the same spelling
    shadow = (
        {v.name for v in graph.input}
        | {t.name for t in graph.initializer}
        | {o for n in graph.node for o in n.output}
    )
    inner_rename = {k: v for k, v in rename.items() if k not in shadow}
    resolved = [_resolve(n, attrs, missing - shadow, inner_rename) for n in graph.node]
    del graph.node[:]
    graph.node.extend(resolved)
    for v in graph.output:  # a subgraph may return a body value directly
        if v.name not in shadow and v.name in inner_rename:
            v.name = inner_rename[v.name]
