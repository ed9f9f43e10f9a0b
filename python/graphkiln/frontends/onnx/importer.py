# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX ModelProto -> ir.Graph: initializers, inputs, nodes (through ops_table), subgraphs."""

from __future__ import annotations

import os
from typing import Any

import onnx
from google.protobuf.message import DecodeError

from ...errors import GraphkilnError, ModelError, UnsupportedOperatorError
from ...ir import Graph, Value
from . import protos
from .context import ImportContext
from .functions import expand_function
from .ops_table import SUBGRAPH_INPUTS, TABLE, find_converter

DEFAULT_DOMAINS = ("", "ai.onnx")
MAX_OPSET = onnx.defs.onnx_opset_version()
MIN_OPSET = 7


def model_from_bytes(data: bytes) -> onnx.ModelProto:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected the model as bytes, got {type(data).__name__}")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelError(f"not an ONNX model (protobuf decoding failed: {exc})") from None
    if not model.HasField("graph"):
        raise ModelError("not an ONNX model: it has no graph")
    return model


def read_model_file(path) -> tuple[onnx.ModelProto, str]:
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ModelError(f"cannot read model {path!r}: {exc.strerror}") from None
    model = model_from_bytes(data)
    protos.load_external_data(model, os.path.dirname(os.path.abspath(path)))
    return model, path


def import_model(model: onnx.ModelProto, input_shapes: dict | None = None,
                 default_dim: int | None = 1) -> Graph:
    opsets = {}
    for entry in model.opset_import:
        opsets[entry.domain] = entry.version
    opset = opsets.get("", opsets.get("ai.onnx"))
    if opset is None:
        if any(n.domain in DEFAULT_DOMAINS for n in model.graph.node) or not opsets:
            raise ModelError("the model imports no opset of the default ONNX domain")
        opsets[""] = opset = MAX_OPSET  # only other domains' nodes: they are refused by name
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ModelError(f"opset {opset} is outside what graphkiln imports "
                         f"({MIN_OPSET} to {MAX_OPSET})")
    importer = _Importer(opsets, input_shapes or {}, default_dim)
    graph = importer.graph(model.graph, None, {}, top=True)
    unknown = set(input_shapes or {}) - {v.name for v in graph.inputs}
    if unknown:
        raise ValueError(f"input_shapes names {sorted(unknown)}, which are not inputs of the "
                         f"model (inputs: {[v.name for v in graph.inputs]})")
    return graph


class _Importer:
    def __init__(self, opsets: dict[str, int], input_shapes: dict, default_dim: int | None):
        self.opsets = opsets
        self.input_shapes = input_shapes
        self.default_dim = default_dim

    def graph(self, gp: onnx.GraphProto, parent: Graph | None, outer: dict[str, Value],
              top: bool = False, name: str = "main", input_types: list | None = None) -> Graph:
        graph = Graph(name if top else (gp.name or name), parent)
        scope: dict[str, Value] = dict(outer)
        init_names = set()
        for tensor in gp.initializer:
            where = f"initializer {tensor.name!r}"
            scope[tensor.name] = graph.constant(protos.tensor_to_array(tensor, where), tensor.name)
            init_names.add(tensor.name)
        for sparse in gp.sparse_initializer:
            nm = sparse.values.name
            scope[nm] = graph.constant(protos.sparse_to_array(sparse, nm), nm)
            init_names.add(nm)
        for i, vi in enumerate(gp.input):
            if vi.name in init_names:
                continue  # an initializer listed as input: a constant at inference
            where = f"input {vi.name!r}"
            override = self.input_shapes.get(vi.name) if top else None
            if not vi.type.WhichOneof("value") and input_types and i < len(input_types) \
                    and input_types[i] is not None:
                dtype = input_types[i]  # an untyped subgraph input: typed from the outer node
            else:
                dtype = protos.type_from_proto(vi.type, where, override,
                                               self.default_dim if top else None)
            value = graph.add_input(vi.name, dtype)
            scope[vi.name] = value
        for node in _topological(gp, scope):
            self.node(node, graph, scope)
        for vi in gp.output:
            if vi.name not in scope:
                raise ModelError(f"graph {gp.name!r}: output {vi.name!r} is not produced by "
                                 "any node, input or initializer")
            graph.outputs.append(scope[vi.name])
        return graph

    def node(self, node: onnx.NodeProto, graph: Graph, scope: dict[str, Value]) -> None:
        op, label = node.op_type, node.name or (node.output[0] if node.output else node.op_type)
        domain = node.domain
        default_opset = self.opsets.get("", self.opsets.get("ai.onnx"))
        if domain not in DEFAULT_DOMAINS or not find_converter(op, default_opset)[0]:
            # no converter: an op ONNX defines as a function is imported as its body
            if expand_function(self, node, graph, scope, default_opset):
                return
        opset = self.opsets.get(domain)
        if domain not in DEFAULT_DOMAINS:
            raise UnsupportedOperatorError(op, label, domain, opset,
                                           "graphkiln imports the default ONNX domain only")
        opset = self.opsets.get("", self.opsets.get("ai.onnx"))
        found, converter = find_converter(op, opset)
        if not found:
            raise UnsupportedOperatorError(op, label, domain, opset, _nearby(op, opset))
        inputs = []
        for name in node.input:
            if not name:
                inputs.append(None)
            elif name not in scope:
                raise ModelError(f"node {label!r} ({op}) reads {name!r}, which no node, input "
                                 "or initializer defines")
            else:
                inputs.append(scope[name])
        while inputs and inputs[-1] is None:
            inputs.pop()
        A = onnx.AttributeProto
        attrs = {a.name: self.attribute(a, graph, scope, label)
                 for a in node.attribute if a.type != A.GRAPH}
        for a in node.attribute:
            if a.type == A.GRAPH:
                hook = SUBGRAPH_INPUTS.get((op, a.name))
                types = hook(inputs, attrs, opset) if hook else None
                attrs[a.name] = self.attribute(a, graph, scope, label, types)
        outputs = [o or None for o in node.output]
        ctx = ImportContext(graph, op, node.name, opset, inputs, attrs, outputs)
        try:
            results = converter(ctx) if converter else ctx.emit()
        except GraphkilnError as exc:
            if isinstance(exc, UnsupportedOperatorError):
                raise
            raise ModelError(f"node {label!r} ({op}, opset {opset}): {exc}") from exc
        except Exception as exc:  # a malformed node must not escape as a bare KeyError etc.
            raise ModelError(f"node {label!r} ({op}, opset {opset}) cannot be imported: "
                             f"{type(exc).__name__}: {exc}") from exc
        for name, value in zip(node.output, results):
            if name:
                scope[name] = value

    def attribute(self, attr: onnx.AttributeProto, graph: Graph, scope: dict[str, Value],
                  label: str, input_types: list | None = None) -> Any:
        where = f"node {label!r} attribute {attr.name!r}"
        A = onnx.AttributeProto
        kind = attr.type
        if attr.ref_attr_name:
            raise ModelError(f"{where}: refers to a function attribute outside a function")
        if kind == A.FLOAT:
            return attr.f
        if kind == A.INT:
            return attr.i
        if kind == A.STRING:
            return attr.s.decode("utf-8", "surrogateescape")
        if kind == A.FLOATS:
            return tuple(attr.floats)
        if kind == A.INTS:
            return tuple(attr.ints)
        if kind == A.STRINGS:
            return tuple(s.decode("utf-8", "surrogateescape") for s in attr.strings)
        if kind == A.TENSOR:
            return protos.tensor_to_array(attr.t, where)
        if kind == A.SPARSE_TENSOR:
            return protos.sparse_to_array(attr.sparse_tensor, where)
        if kind == A.GRAPH:
            return self.graph(attr.g, graph, scope, name=attr.name, input_types=input_types)
        if kind == A.TENSORS:
            return tuple(protos.tensor_to_array(t, where) for t in attr.tensors)
        if kind == A.TYPE_PROTO:
            return protos.type_from_proto(attr.tp, where)
        raise ModelError(f"{where}: attribute type {A.AttributeType.Name(kind)} is not supported")


def _topological(gp: onnx.GraphProto, scope: dict[str, Value]) -> list[onnx.NodeProto]:
    """Nodes in an order where producers come first (ONNX requires it; some exporters slip)."""
    nodes = list(gp.node)
    produced = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    done = [False] * len(nodes)
    order: list[onnx.NodeProto] = []
    defined = set(scope)
    visiting = set()

    def visit(i: int) -> None:
        if done[i]:
            return
        if i in visiting:
            raise ModelError(f"the graph has a cycle through node {nodes[i].name or nodes[i].op_type!r}")
        visiting.add(i)
        for name in _reads(nodes[i]):
            if name and name not in defined and name in produced:
                visit(produced[name])
        visiting.discard(i)
        done[i] = True
        defined.update(o for o in nodes[i].output if o)
        order.append(nodes[i])

    for i in range(len(nodes)):
        stack_safe_visit(visit, i)
    return order


def stack_safe_visit(visit, i: int) -> None:
    import sys

    limit = sys.getrecursionlimit()
    try:
        visit(i)
    except RecursionError:
        raise ModelError("the graph is too deep to order (a dependency chain longer than "
                         f"about {limit} nodes in the wrong order)") from None


def _reads(node: onnx.NodeProto) -> list[str]:
    names = list(node.input)
    for attr in node.attribute:
        subs = list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])
        for g in subs:
            for n in g.node:
                names.extend(_reads(n))
    return names


def _nearby(op: str, opset: int) -> str:
    entries = TABLE.get(op)
    if entries:
        return f"graphkiln imports {op} from opset {entries[0][0]}"
    close = sorted(o for o in TABLE if o.lower()[:4] == op.lower()[:4])[:8]
    return "graphkiln does not import it" + (f"; similar ops it imports: {', '.join(close)}"
                                            if close else "")
