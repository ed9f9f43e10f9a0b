# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX ModelProto -> ir.Graph: initializers, inputs, nodes (through ops_table), subgraphs."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import onnx
from google.protobuf.message import DecodeError

from ...errors import GraphkilnError, ModelError, UnsupportedOperatorError
from ...ir import Graph, TensorType, Value
from . import protos
from .context import ImportContext
from .decompositions import DECOMPOSED, attach_decomposition
from .functions import expand_function
from .input_shapes import check_input_shapes
from .limits import (
    DEFAULT_MAX_TENSOR_BYTES,
    MAX_SUBGRAPH_DEPTH,
    check_tensor_bytes,
    resolve_max_tensor_bytes,
)
from .microsoft_ops import DOMAIN as MICROSOFT_DOMAIN
from .microsoft_ops import find_default_domain_extension, find_microsoft_converter
from .ops_table import SUBGRAPH_INPUTS, TABLE, find_converter
from .symbolic_dims import DimNamer

DEFAULT_DOMAINS = ("", "ai.onnx")
MAX_OPSET = onnx.defs.onnx_opset_version()
MIN_OPSET = 7
MAX_DOMAIN_VERSION = 10_000  # any domain's opset version; real ones are far below


def model_from_bytes(data: bytes) -> onnx.ModelProto:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected the model as bytes, got {type(data).__name__}")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError) as exc:
        if "MaxDepth" in str(exc):
            raise ModelError(
                "the model nests messages (subgraphs inside subgraphs) deeper than "
                f"protobuf decodes: {exc}"
            ) from None
        raise ModelError(f"not an ONNX model (protobuf decoding failed: {exc})") from None
    if not model.HasField("graph"):
        raise ModelError("not an ONNX model: it has no graph")
    return model


def read_model_file(path, max_tensor_bytes: int | None = None) -> tuple[onnx.ModelProto, str]:
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ModelError(f"cannot read model {path!r}: {exc.strerror}") from None
    model = model_from_bytes(data)
    protos.load_external_data(
        model, os.path.dirname(os.path.abspath(path)), resolve_max_tensor_bytes(max_tensor_bytes)
    )
    return model, path


MODEL_SOURCES = (
    "a path (str or os.PathLike), the serialized model (bytes, bytearray or "
    "memoryview) or an onnx.ModelProto"
)


def read_model(source, max_tensor_bytes: int | None = None) -> onnx.ModelProto:
    """The model of `source`, one of MODEL_SOURCES. Only a path's external data is read
    (from beside it); a ModelProto is used as it is and not changed."""
    if isinstance(source, onnx.ModelProto):
        if not source.HasField("graph"):
            raise ModelError("not an ONNX model: the ModelProto has no graph")
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        try:
            return model_from_bytes(source)
        except ModelError as exc:
            if len(source) < 4096 and b"\0" not in source and os.path.exists(bytes(source)):
                raise ModelError(
                    f"{exc} (bytes are read as a serialized model; pass the path "
                    f"{bytes(source)!r} as str or os.PathLike)"
                ) from None
            raise
    if isinstance(source, (str, os.PathLike)):
        return read_model_file(source, max_tensor_bytes)[0]
    raise TypeError(
        f"cannot read an ONNX model from {type(source).__name__}: expected {MODEL_SOURCES}"
    )


def import_model(
    model: onnx.ModelProto,
    input_shapes: dict | None = None,
    default_dim: int | None = None,
    max_tensor_bytes: int | None = None,
) -> Graph:
    """The model as an ir.Graph. Input dims `input_shapes` does not fix stay symbolic
    (symbolic_dims.py says how they are named), or become `default_dim` when it is an int.
    `max_tensor_bytes` (default: GRAPHKILN_MAX_TENSOR_BYTES, else
    4 GiB) bounds every tensor the model declares or whose static shape it infers."""
    limit = resolve_max_tensor_bytes(max_tensor_bytes)
    opsets = {}
    for entry in model.opset_import:
        if not 1 <= entry.version <= MAX_DOMAIN_VERSION:
            raise ModelError(
                f"opset_import of domain {entry.domain or 'ai.onnx'!r} has "
                f"version {entry.version}, outside 1..{MAX_DOMAIN_VERSION}"
            )
        opsets[entry.domain] = entry.version
    opset = opsets.get("", opsets.get("ai.onnx"))
    if opset is None:
        if any(n.domain in DEFAULT_DOMAINS for n in model.graph.node) or not opsets:
            raise ModelError("the model imports no opset of the default ONNX domain")
        opsets[""] = opset = MAX_OPSET  # only other domains' nodes: they are refused by name
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ModelError(
            f"opset {opset} is outside what graphkiln imports ({MIN_OPSET} to {MAX_OPSET})"
        )
    input_shapes = check_input_shapes(model.graph, input_shapes)
    if default_dim is not None and (
        isinstance(default_dim, bool) or not isinstance(default_dim, int) or default_dim < 0
    ):
        raise ValueError(
            f"default_dim must be None (symbolic dims stay symbolic) or an int "
            f">= 0, got {default_dim!r}"
        )
    importer = _Importer(opsets, input_shapes, default_dim, limit)
    importer.namer = DimNamer(model.graph.input, input_shapes)
    try:
        graph = importer.graph(model.graph, None, {}, top=True)
    except RecursionError:  # a last resort: nesting is bounded before the stack runs out
        raise ModelError("the model nests too deeply to import") from None
    return graph


class _Importer:
    def __init__(
        self,
        opsets: dict[str, int],
        input_shapes: dict,
        default_dim: int | None,
        max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES,
    ):
        self.opsets = opsets
        self.input_shapes = input_shapes
        self.default_dim = default_dim
        self.max_tensor_bytes = max_tensor_bytes
        self.depth = 0  # subgraphs being imported, one inside the other
        self._schemas: dict[tuple[str, int], dict[str, int]] = {}  # ONNX attribute types
        self.function_depth = 0  # > 0 while function bodies are imported
        self.namer: DimNamer | None = None  # names the top-level inputs' symbolic dims

    def graph(
        self,
        gp: onnx.GraphProto,
        parent: Graph | None,
        outer: dict[str, Value],
        top: bool = False,
        name: str = "main",
        input_types: list | None = None,
    ) -> Graph:
        if self.depth >= MAX_SUBGRAPH_DEPTH:
            raise ModelError(
                f"subgraph {gp.name or name!r} is nested more than {MAX_SUBGRAPH_DEPTH} levels deep"
            )
        self.depth += 1
        try:
            return self._graph(gp, parent, outer, top, name, input_types)
        finally:
            self.depth -= 1

    def _graph(
        self,
        gp: onnx.GraphProto,
        parent: Graph | None,
        outer: dict[str, Value],
        top: bool,
        name: str,
        input_types: list | None,
    ) -> Graph:
        limit = self.max_tensor_bytes
        graph = Graph(name if top else (gp.name or name), parent)
        scope: dict[str, Value] = dict(outer)
        init_names = set()
        for tensor in gp.initializer:
            where = f"initializer {tensor.name!r}"
            scope[tensor.name] = graph.constant(
                protos.tensor_to_array(tensor, where, limit), tensor.name
            )
            init_names.add(tensor.name)
        for sparse in gp.sparse_initializer:
            nm = sparse.values.name
            scope[nm] = graph.constant(
                protos.sparse_to_array(sparse, f"sparse initializer {nm!r}", limit), nm
            )
            init_names.add(nm)
        for i, vi in enumerate(gp.input):
            if vi.name in init_names:
                continue  # an initializer listed as input: a constant at inference
            where = f"input {vi.name!r}"
            override = self.input_shapes.get(vi.name) if top else None
            if (
                not vi.type.WhichOneof("value")
                and input_types
                and i < len(input_types)
                and input_types[i] is not None
            ):
                dtype = input_types[i]  # an untyped subgraph input: typed from the outer node
            else:
                dtype = protos.type_from_proto(
                    vi.type,
                    where,
                    override,
                    self.default_dim if top else None,
                    self.namer if top else None,
                    vi.name,
                )
            value = graph.add_input(vi.name, dtype)
            self.check_size(value, "input")
            scope[vi.name] = value
        for node in _topological(gp, scope):
            self.node(node, graph, scope)
        for vi in gp.output:
            if vi.name not in scope:
                raise ModelError(
                    f"graph {gp.name!r}: output {vi.name!r} is not produced by "
                    "any node, input or initializer"
                )
            graph.outputs.append(scope[vi.name])
        return graph

    def node(self, node: onnx.NodeProto, graph: Graph, scope: dict[str, Value]) -> None:
        op, label = node.op_type, node.name or (node.output[0] if node.output else node.op_type)
        domain = node.domain
        opset = self.opsets.get("", self.opsets.get("ai.onnx"))
        default_domain = domain in DEFAULT_DOMAINS
        found, converter = find_converter(op, opset) if default_domain else (False, None)
        if domain == MICROSOFT_DOMAIN:  # onnxruntime's contrib ops: microsoft_ops.py
            opset = self.opsets.get(domain)
            converter, why_not = find_microsoft_converter(op, opset)
            if converter is None:
                raise UnsupportedOperatorError(op, label, domain, opset, why_not)
            found = True
        # no converter: an op ONNX defines as a function is imported as its body
        if not found and expand_function(self, node, graph, scope, opset):
            return
        if not found and default_domain and find_default_domain_extension(op) is not None:
            converter, found = find_default_domain_extension(op), True
        if not found and not default_domain:
            raise UnsupportedOperatorError(
                op,
                label,
                domain,
                self.opsets.get(domain),
                "graphkiln imports the default ONNX domain only",
            )
        if not found:
            raise UnsupportedOperatorError(op, label, domain, opset, _nearby(op, opset))
        inputs = []
        for name in node.input:
            if not name:
                inputs.append(None)
            elif name not in scope:
                raise ModelError(
                    f"node {label!r} ({op}) reads {name!r}, which no node, input "
                    "or initializer defines"
                )
            else:
                inputs.append(scope[name])
        while inputs and inputs[-1] is None:
            inputs.pop()
        A = onnx.AttributeProto
        if default_domain:  # the kinds of ONNX's schemas (com.microsoft's are not known)
            self.check_attribute_kinds(node, opset, label)
        attrs = {
            a.name: self.attribute(a, graph, scope, label)
            for a in node.attribute
            if a.type != A.GRAPH
        }
        for a in node.attribute:
            if a.type == A.GRAPH:
                hook = SUBGRAPH_INPUTS.get((op, a.name))
                try:
                    types = hook(inputs, attrs, opset) if hook else None
                except RecursionError:
                    raise
                except Exception as exc:  # attributes of the wrong kind, and the like
                    raise ModelError(
                        f"node {label!r} ({op}): cannot type the inputs of "
                        f"subgraph {a.name!r}: {type(exc).__name__}: {exc}"
                    ) from exc
                attrs[a.name] = self.attribute(a, graph, scope, label, types)
        outputs = [o or None for o in node.output]
        ctx = ImportContext(graph, op, node.name, opset, inputs, attrs, outputs)
        first_new = len(graph.nodes)
        try:
            results = converter(ctx) if converter else ctx.emit()
            for added in graph.nodes[first_new:]:
                for value in added.outputs:
                    self.check_size(value, "output")
        except GraphkilnError as exc:
            if isinstance(exc, UnsupportedOperatorError):
                raise
            raise ModelError(f"node {label!r} ({op}, opset {opset}): {exc}") from exc
        except RecursionError:
            raise  # import_model reports it for the whole model
        except Exception as exc:  # a malformed node must not escape as a bare KeyError etc.
            raise ModelError(
                f"node {label!r} ({op}, opset {opset}) cannot be imported: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if op in DECOMPOSED and default_domain:
            attach_decomposition(self.for_body, node, opset, graph.nodes[first_new:], inputs)
        for name, value in zip(node.output, results):
            if name:
                scope[name] = value

    @property
    def for_body(self):
        """Makes a fresh importer with this one's opsets and tensor limit (a lazily imported
        decomposition's: decompositions.py), holding no reference to this one."""
        return partial(_Importer, dict(self.opsets), {}, None, self.max_tensor_bytes)

    def check_attribute_kinds(self, node: onnx.NodeProto, opset: int, label: str) -> None:
        """Each attribute has the type ONNX's schema gives it (an INTS where an INT belongs
        would otherwise surface as an obscure error inside a converter). Not checked in
        function bodies, whose attribute references take the caller's values as given."""
        if self.function_depth:
            return
        key = (node.op_type, opset)
        if key not in self._schemas:
            try:
                schema = onnx.defs.get_schema(node.op_type, opset, "")
                self._schemas[key] = {n: a.type for n, a in schema.attributes.items()}
            except onnx.defs.SchemaError:
                self._schemas[key] = {}
        kinds = self._schemas[key]
        A = onnx.AttributeProto
        for a in node.attribute:
            want = kinds.get(a.name)
            if want is not None and a.type != want and not a.ref_attr_name:
                got = (
                    A.AttributeType.Name(a.type)
                    if a.type in A.AttributeType.values()
                    else str(a.type)
                )
                raise ModelError(
                    f"node {label!r} ({node.op_type}): attribute {a.name!r} is "
                    f"{got}, ONNX defines it as {A.AttributeType.Name(want)}"
                )

    def check_size(self, value: Value | None, where: str) -> None:
        """Refuse a value whose static type is larger than the tensor limit (shape inference
        of ConstantOfShape, Expand, Tile, Range ... with huge constant sizes)."""
        t = None if value is None else value.type
        if isinstance(t, TensorType) and t.is_static and t.nbytes() > self.max_tensor_bytes:
            check_tensor_bytes(
                f"{where} {value.name!r} ({t.dtype.value})",
                t.dims,
                t.dtype.itemsize,
                self.max_tensor_bytes,
            )

    def attribute(
        self,
        attr: onnx.AttributeProto,
        graph: Graph,
        scope: dict[str, Value],
        label: str,
        input_types: list | None = None,
    ) -> Any:
        where = f"node {label!r} attribute {attr.name!r}"
        limit = self.max_tensor_bytes
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
            return protos.tensor_to_array(attr.t, where, limit)
        if kind == A.SPARSE_TENSOR:
            return protos.sparse_to_array(attr.sparse_tensor, where, limit)
        if kind == A.GRAPH:
            return self.graph(attr.g, graph, scope, name=attr.name, input_types=input_types)
        if kind == A.TENSORS:
            return tuple(protos.tensor_to_array(t, where, limit) for t in attr.tensors)
        if kind == A.TYPE_PROTO:
            return protos.type_from_proto(attr.tp, where)
        raise ModelError(f"{where}: attribute type {A.AttributeType.Name(kind)} is not supported")


def _topological(gp: onnx.GraphProto, scope: dict[str, Value]) -> list[onnx.NodeProto]:
    """Nodes in an order where producers come first (ONNX requires it; some exporters slip).
    A depth-first walk with an explicit stack, so that long chains cannot overflow it."""
    nodes = list(gp.node)
    produced = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    defined = set(scope)
    state = [0] * len(nodes)  # 0 unvisited, 1 on the walk's path, 2 placed
    order: list[onnx.NodeProto] = []
    for root in range(len(nodes)):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(_reads(nodes[root])))]
        while stack:
            i, pending = stack[-1]
            for name in pending:
                j = produced.get(name) if name and name not in defined else None
                if j is None or state[j] == 2:
                    continue
                if state[j] == 1:
                    raise ModelError(
                        f"the graph has a cycle through node {nodes[j].name or nodes[j].op_type!r}"
                    )
                state[j] = 1
                stack.append((j, iter(_reads(nodes[j]))))
                break
            else:
                stack.pop()
                state[i] = 2
                defined.update(o for o in nodes[i].output if o)
                order.append(nodes[i])
    return order


def _reads(node: onnx.NodeProto) -> list[str]:
    """Names a node reads: its inputs and, at any depth, those of its subgraphs' nodes."""
    names = list(node.input)
    pending = [node]
    while pending:
        for attr in pending.pop().attribute:
            for g in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                for n in g.node:
                    names.extend(n.input)
                    pending.append(n)
    return names


def _nearby(op: str, opset: int) -> str:
    entries = TABLE.get(op)
    if entries:
        return f"graphkiln imports {op} from opset {entries[0][0]}"
    close = sorted(o for o in TABLE if o.lower()[:4] == op.lower()[:4])[:8]
    return "graphkiln does not import it" + (
        f"; similar ops it imports: {', '.join(close)}" if close else ""
    )
