# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Document -> Program, trusting nothing: every field is type- and range-checked, every
value reference must name a value already defined and visible (so no cycles), every op and
attribute must match the schema table. Types come from the file: no inference runs."""

from __future__ import annotations

from ..errors import CompileError, FormatError, GraphError
from ..device import GpuCompatibilityError
from ..ir import (
    Decomposition,
    DType,
    Graph,
    Node,
    OptionalType,
    SequenceType,
    TensorType,
    Value,
    get_schema,
)
from ..ir.schema import ATTR_KINDS, REQUIRED
from ..passes.manager import PassRecord
from ..program import Program
from .attributes import NOT_QUICK, checked_value, quick_value
from .cpu_plan import read_cpu_plan
from .gpu_plan import FIELD as GPU_PLANS, read_gpu_plans
from .checks import damaged, need_dict, need_float, need_int, need_list, need_str
from .limits import Limits


def program_from_document(doc: dict, tensors: list, limits: Limits) -> Program:
    need_dict(
        doc, "document", ("graph", "compiled"), ("producer", "tensors", "magic", "format_version")
    )
    program = Program(GraphDecoder(tensors, limits).graph(doc["graph"], "graph"))
    compiled = doc["compiled"]
    if compiled is not None:
        _restore_compiled(program, compiled, tensors, limits)
    return program


def _restore_compiled(program: Program, compiled, tensors: list, limits: Limits) -> None:
    from ..targets import available_targets, get_target

    where = "compiled"
    need_dict(
        compiled,
        where,
        ("target", "options", "graph", "passes", "compile_ms"),
        ("gpu_arch", "cpu_plan", GPU_PLANS),
    )
    name = need_str(compiled["target"], f"{where}.target", limits)
    if name not in available_targets():
        raise FormatError(
            f"the program was compiled for target {name[:40]!r}, which this build "
            f"of graphkiln lacks (available: {', '.join(available_targets())})"
        )
    target = get_target(name)
    options = need_dict(compiled["options"], f"{where}.options", (), tuple(target.options))
    for key, value in options.items():
        if not isinstance(value, (bool, int, float, str)):
            raise damaged(f"{where}.options.{key}", "an option must be a bool, number or string")
    decoder = GraphDecoder(tensors, limits)
    graph = decoder.graph(compiled["graph"], f"{where}.graph")
    records = []
    for i, item in enumerate(need_list(compiled["passes"], f"{where}.passes", limits)):
        at = f"{where}.passes[{i}]"
        need_dict(item, at, ("name", "ms", "nodes_after"))
        records.append(
            PassRecord(
                need_str(item["name"], f"{at}.name", limits),
                need_float(item["ms"], f"{at}.ms"),
                need_int(item["nodes_after"], f"{at}.nodes_after", 0),
            )
        )
    plan_shapes = []
    if GPU_PLANS in compiled:  # checked here, before anything asks for a device
        if name != "gpu":
            raise damaged(
                f"{where}.{GPU_PLANS}", f"gpu plan shapes in a program for target {name!r}"
            )
        plan_shapes = read_gpu_plans(compiled[GPU_PLANS], graph, limits)
    if "gpu_arch" in compiled:
        _check_gpu_arch(need_str(compiled["gpu_arch"], f"{where}.gpu_arch", limits))
    saved = None
    if "cpu_plan" in compiled:
        if name != "cpu":
            raise damaged(f"{where}.cpu_plan", f"a saved cpu plan in a program for target {name!r}")
        saved = read_cpu_plan(compiled["cpu_plan"], graph, decoder.values, tensors, limits)
    if saved is not None:  # the saved plan and packed weights, as they are: no lowering
        try:
            executable = target.from_saved(graph, dict(options), saved)
        except (CompileError, GraphError, ValueError, TypeError, RuntimeError, MemoryError) as exc:
            raise FormatError(
                f"damaged file: the saved cpu plan does not build: "
                f"{type(exc).__name__}: {str(exc)[:300]}"
            ) from None
    else:
        executable = _lower(target, name, graph, options)
        _build_plans(executable, plan_shapes)
    program.compiled_graph, program.pass_records = graph, records
    program.target, program.options = target, dict(options)
    program.compile_ms = need_float(compiled["compile_ms"], f"{where}.compile_ms")
    program._executable = executable


def _lower(target, name: str, graph: Graph, options: dict):
    """The executable of the compiled graph, lowered again by its target."""
    try:
        return target.compile(graph, dict(options))
    except GpuCompatibilityError as exc:
        raise FormatError(
            f"the program was compiled for target {name!r}, which cannot run here: {exc}"
        ) from None
    except (CompileError, GraphError, ValueError) as exc:
        raise FormatError(
            f"the saved compiled graph does not lower on target {name!r}: {exc}"
        ) from None
    except (TypeError, KeyError, IndexError, AttributeError, MemoryError) as exc:
        # a damaged graph the lowering did not expect (e.g. a value without a type, sizes
        # too large to allocate): no passes or type inference run on a loaded graph
        raise FormatError(
            f"damaged file: the saved compiled graph does not lower on target "
            f"{name!r}: {type(exc).__name__}: {str(exc)[:200]}"
        ) from None


def _build_plans(executable, plan_shapes: list) -> None:
    """Build a loaded gpu program's saved plan shapes on this device, least recently used
    first (so the cache keeps their order), at most as many as its plan cache holds."""
    keep = getattr(getattr(executable, "_plans", None), "limit", len(plan_shapes))
    first = max(0, len(plan_shapes) - keep)
    for n, signature in enumerate(plan_shapes[first:], first):
        try:
            executable.build_ahead(signature)
        except (CompileError, GraphError, ValueError, TypeError, RuntimeError, MemoryError) as exc:
            raise FormatError(
                f"the saved gpu plan shapes compiled.{GPU_PLANS}[{n}] "
                f"({[list(s) for s in signature]}) do not build here: "
                f"{type(exc).__name__}: {str(exc)[:300]}"
            ) from None


def _check_gpu_arch(arch: str) -> None:
    """A gpu program runs only on a GPU of the architecture it was compiled for."""
    from ..device import devices

    here = sorted({d.arch for d in devices()})
    if arch not in here:
        raise FormatError(
            f"the program was compiled for GPU architecture {arch[:40]!r}; this "
            f"machine's GPUs: {', '.join(here) or 'none'}. Compile the model again "
            "here (graphkiln compile MODEL --target gpu -o FILE)"
        )


def read_type(obj, where: str, limits: Limits, depth: int = 0):
    if obj is None:
        return None
    if depth > limits.max_depth:
        raise damaged(where, "types nested too deeply")
    items = need_list(obj, where, limits)
    if not items or items[0] not in ("tensor", "sequence", "optional"):
        raise damaged(where, f"expected a tensor, sequence or optional type, got {str(items)[:40]}")
    if items[0] != "tensor":
        need_list(items, where, limits, 2)
        elem = read_type(items[1], f"{where}[1]", limits, depth + 1)
        return SequenceType(elem) if items[0] == "sequence" else OptionalType(elem)
    need_list(items, where, limits, 3)
    try:
        dtype = DType(items[1]) if isinstance(items[1], str) else None
    except ValueError:
        dtype = None
    if dtype is None:
        raise damaged(f"{where}[1]", f"unknown dtype {str(items[1])[:20]!r}")
    dims = items[2]
    if dims is None:
        return TensorType(dtype, None)
    need_list(dims, f"{where}[2]", limits)
    if len(dims) > limits.max_rank:
        raise damaged(f"{where}[2]", f"rank {len(dims)} is over the limit {limits.max_rank}")
    for i, dim in enumerate(dims):
        if isinstance(dim, str):
            need_str(dim, f"{where}[2][{i}]", limits)
        else:
            need_int(dim, f"{where}[2][{i}]", 0, limits.max_dim)
    try:
        return TensorType(dtype, tuple(dims))
    except ValueError as exc:
        raise damaged(f"{where}[2]", str(exc)) from None


_NODE_FIELDS = frozenset(("op", "name", "inputs", "outputs", "attrs", "decomposition"))


class GraphDecoder:
    """Rebuilds one top-level graph. `values[id]` are the values defined so far and
    `visible[id]` whether that value may be read where the decoder is (a subgraph's values
    stop being visible when it ends). Hot paths check types first and build the location
    text of an error message only when there is an error."""

    def __init__(self, tensors: list, limits: Limits):
        self.tensors = tensors
        self.limits = limits
        self.values: list[Value] = []
        self.visible: list[bool] = []
        self.depth = 0
        self.node_count = 0
        self.known_types: dict = {}  # tensor types already checked, by (dtype, dims)
        self.schemas: dict = {}
        self.arity: dict = {}  # op -> (fewest inputs, most inputs, most outputs)

    def value_type(self, obj, where: str):
        """read_type, remembering tensor types (a model repeats few of them)."""
        if type(obj) is list and len(obj) == 3 and obj[0] == "tensor" and type(obj[2]) is list:
            try:
                key = (obj[1], tuple(obj[2]))
                found = self.known_types.get(key)
            except TypeError:  # an unhashable item: let read_type say what is wrong
                return read_type(obj, where, self.limits)
            if found is None:
                found = self.known_types[key] = read_type(obj, where, self.limits)
            return found
        return read_type(obj, where, self.limits)

    def graph(self, obj, where: str, parent: Graph | None = None) -> Graph:
        if self.depth >= self.limits.max_depth:
            raise damaged(where, f"subgraphs nested deeper than {self.limits.max_depth}")
        need_dict(obj, where, ("name", "inputs", "nodes", "outputs"))
        graph = Graph(need_str(obj["name"], f"{where}.name", self.limits), parent)
        first_id = len(self.values)
        self.depth += 1
        for i, item in enumerate(need_list(obj["inputs"], f"{where}.inputs", self.limits)):
            graph.inputs.append(self.define(item, where, "inputs", i, graph, None))
        for i, item in enumerate(need_list(obj["nodes"], f"{where}.nodes", self.limits)):
            graph.nodes.append(self.node(item, f"{where}.nodes[{i}]", graph))
        for i, ref in enumerate(need_list(obj["outputs"], f"{where}.outputs", self.limits)):
            value = self.lookup(ref, where, "outputs", i)
            if value is None:
                raise damaged(f"{where}.outputs[{i}]", "a graph output cannot be omitted")
            graph.outputs.append(value)
        self.depth -= 1
        if parent is not None:  # the subgraph's values are not visible outside it
            visible = self.visible
            for value_id in range(first_id, len(visible)):
                visible[value_id] = False
        return graph

    def define(
        self, obj, where: str, field: str, index: int, graph: Graph, producer: Node | None
    ) -> Value:
        expected = len(self.values)
        if not (
            type(obj) is dict
            and len(obj) == 3
            and obj.get("id") == expected
            and type(obj["id"]) is int
            and type(obj.get("name")) is str
            and "type" in obj
        ):
            at = f"{where}.{field}[{index}]"
            need_dict(obj, at, ("id", "name", "type"))
            need_int(obj["id"], f"{at}.id", expected, expected)
            need_str(obj["name"], f"{at}.name", self.limits)
        name = obj["name"]
        if name in graph._names or len(name) > self.limits.max_string_bytes:
            raise damaged(
                f"{where}.{field}[{index}].name",
                f"value name {name[:40]!r} is defined twice in one graph or too long",
            )
        graph._names.add(name)
        value = Value(
            name, self.value_type(obj["type"], f"{where}.{field}[{index}].type"), producer
        )
        self.values.append(value)
        self.visible.append(True)
        return value

    def lookup(self, ref, where: str, field: str, index: int) -> Value | None:
        if ref is None:
            return None
        if type(ref) is int and 0 <= ref < len(self.values) and self.visible[ref]:
            return self.values[ref]
        need_int(ref, f"{where}.{field}[{index}]", 0)
        raise damaged(
            f"{where}.{field}[{index}]",
            f"value id {ref} is not defined before this point (or not visible here)",
        )

    def schema(self, op, where: str):
        found = self.schemas.get(op) if type(op) is str else None
        if found is None:
            need_str(op, f"{where}.op", self.limits)
            try:
                found = self.schemas[op] = get_schema(op)
            except GraphError:
                raise damaged(f"{where}.op", f"unknown op {op[:40]!r}") from None
        return found

    def node(self, obj, where: str, graph: Graph) -> Node:
        self.node_count += 1
        if self.node_count > self.limits.max_nodes:
            raise damaged(where, f"more than {self.limits.max_nodes} nodes")
        if not (
            type(obj) is dict
            and obj.keys() <= _NODE_FIELDS
            and "op" in obj
            and "inputs" in obj
            and "outputs" in obj
        ):
            need_dict(obj, where, ("op", "inputs", "outputs"), ("name", "attrs", "decomposition"))
        schema = self.schema(obj["op"], where)
        name = need_str(obj.get("name", ""), f"{where}.name", self.limits)
        lookup = self.lookup
        inputs = [
            lookup(ref, where, "inputs", i)
            for i, ref in enumerate(need_list(obj["inputs"], f"{where}.inputs", self.limits))
        ]
        self._check_arity(schema, inputs, where)
        node = Node(schema.name, inputs, [], {}, name)
        for i, item in enumerate(need_list(obj.get("attrs", []), f"{where}.attrs", self.limits)):
            self.attribute(item, where, i, schema, node, graph)
        for spec in schema.attrs:
            if spec.default is REQUIRED and node.attrs.get(spec.name) is None:
                raise damaged(where, f"op {schema.name} needs attribute {spec.name!r}")
        outputs = need_list(obj["outputs"], f"{where}.outputs", self.limits)
        most = self.arity[schema.name][2]
        if most is not None and len(outputs) > most:
            raise damaged(where, f"op {schema.name} has at most {most} outputs, got {len(outputs)}")
        node.outputs = [
            None if item is None else self.define(item, where, "outputs", i, graph, node)
            for i, item in enumerate(outputs)
        ]
        if "decomposition" in obj:
            node.decomposition = self.decomposition(obj["decomposition"], where, graph, node)
        return node

    def decomposition(self, obj, where: str, graph: Graph, node: Node) -> Decomposition:
        """A node's decomposition: a standalone graph (value ids of its own) taking the
        node's present inputs and making its present outputs; only on nodes of top-level
        graphs (the writer keeps no other)."""
        where = f"{where}.decomposition"
        if graph.parent is not None:
            raise damaged(where, "only nodes of a top-level graph have a decomposition")
        sub = GraphDecoder(self.tensors, self.limits)
        sub.depth, sub.node_count = self.depth + 1, self.node_count
        sub.known_types, sub.schemas, sub.arity = self.known_types, self.schemas, self.arity
        body = sub.graph(obj, where)
        self.node_count = sub.node_count
        ins = sum(v is not None for v in node.inputs)
        outs = sum(v is not None for v in node.outputs)
        if (len(body.inputs), len(body.outputs)) != (ins, outs):
            raise damaged(
                where,
                f"it takes {len(body.inputs)} inputs and makes {len(body.outputs)} outputs; "
                f"the {node.op} node has {ins} and {outs}",
            )
        return Decomposition(body)

    def _check_arity(self, schema, inputs: list, where: str) -> None:
        bounds = self.arity.get(schema.name)
        if bounds is None:
            variadic = any(o.endswith("*") for o in schema.outputs)
            bounds = self.arity[schema.name] = (
                schema.min_inputs,
                schema.max_inputs,
                None if variadic else len(schema.outputs),
            )
        low, high, _ = bounds
        count = len(inputs)
        if count < low or (high is not None and count > high):
            raise damaged(
                where, f"op {schema.name} takes {low}..{high or 'any'} inputs, got {count}"
            )
        if low and None in inputs[:low]:
            raise damaged(where, f"op {schema.name}: input {inputs.index(None)} is required")

    def attribute(
        self, item, node_where: str, index: int, schema, node: Node, graph: Graph
    ) -> None:
        if type(item) is list and len(item) == 3 and type(item[0]) is str:  # the common case
            key, kind, raw = item
            spec = schema.attr_map.get(key)
            if spec is not None and key not in node.attrs:
                if kind == "none":
                    value = None if raw is None else NOT_QUICK
                elif kind == spec.kind and kind != "graph":
                    value = quick_value(kind, raw, self.tensors, self.limits)
                else:
                    value = NOT_QUICK
                if value is not NOT_QUICK:
                    node.attrs[key] = value
                    return
        where = f"{node_where}.attrs[{index}]"
        need_list(item, where, self.limits, 3)
        key, kind, raw = item
        key = need_str(key, f"{where}[0]", self.limits)
        spec = schema.attr_map.get(key)
        if spec is None:
            raise damaged(where, f"op {schema.name} has no attribute {key[:40]!r}")
        if key in node.attrs:
            raise damaged(where, f"attribute {key!r} given twice")
        if kind == "none":
            if raw is not None:
                raise damaged(where, "an absent attribute has no value")
            node.attrs[key] = None
        elif kind not in ATTR_KINDS or kind != spec.kind:
            raise damaged(
                f"{where}[1]",
                f"attribute {key!r} of {schema.name} is {spec.kind}, "
                f"the file says {str(kind)[:20]!r}",
            )
        elif kind == "graph":
            node.attrs[key] = self.graph(raw, f"{where}[2]", graph)
        else:
            node.attrs[key] = checked_value(kind, raw, f"{where}[2]", self.tensors, self.limits)
