# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Replace each small Loop of constant trip count that cannot end early, and each small Scan
of static length, by its body repeated once per iteration (issue #21: "a constant-trip-count
Loop or Scan may be unrolled when small").

    %y = Loop(%M = Constant(3), _, %a0) {body: (i, c, a) -> (c, Add(a, i))}
      ->  %a1 = Add(%a0, 0); %a2 = Add(%a1, 1); %y = Identity(Add(%a2, 2))

Loop: M a constant; the cond input absent (ONNX ignores the body's condition then: M
iterations), or a constant with the body's condition output a constant or its condition
input passed through (so no iteration ends it early).
The iteration number is a constant per iteration, carried values are threaded from one
iteration to the next, and scan outputs are stacked along a new axis 0 (Unsqueeze, Concat).
Scan (opset 9+; the importer rewrites opset 8's batched form): the length is the static dim
of the scan inputs along scan_input_axes; iteration t reads slice t of each scan input
(Gather of a constant index; T-1-t where scan_input_directions is 1), the states are
threaded, scan outputs are stacked along scan_output_axes (in reverse order where
scan_output_directions is 1).

Each iteration's values are new ones with fresh names; values of the enclosing graph that
the body reads are read as they are, and subgraphs inside the body (an If) are copied per
iteration reading the iteration's values. Only when small: at most MAX_TRIPS iterations and
MAX_UNROLLED_NODES nodes added per call (the node count of the body, nested subgraphs
included, times the trips). The nodes added carry inferred types; the caller folds
constants after (a plan's specialization: targets/native/specialize.py)."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, TensorType, Value
from ..ir.clone import clone_graph
from ..ir.graph import node_subgraphs
from ..ir.schema import fill_attrs, get_schema, infer_outputs
from .fold_constants import refresh_node_types
from .util import replace_many

MAX_TRIPS = 256
MAX_UNROLLED_NODES = 4096
UNROLLED_OPS = ("Loop", "Scan")


def run(graph: Graph, ctx=None) -> Graph:
    """Unroll what `unroll_loops` can (the pass-manager form)."""
    unroll_loops(graph)
    return graph


def body_size(graph: Graph) -> int:
    """Nodes of `graph` other than Constants, those of nested subgraphs included."""
    return sum(
        (n.op != "Constant") + sum(body_size(g) for g in node_subgraphs(n)) for n in graph.nodes
    )


def structural_refusal(node: Node) -> str | None:
    """Why `node` can never be unrolled, whatever the shapes and the constants folded from
    them (None: the plan's shapes decide, unroll_refusal)."""
    if node.op not in UNROLLED_OPS:
        return f"{node.op} is not a Loop or Scan"
    body: Graph = node.attrs["body"]
    first = 2 if node.op == "Loop" else 0
    if any(v is None for v in node.inputs[first:]):
        return f"{node.op} with an omitted input"
    if node.op == "Loop":
        if len(node.inputs) < 1 or node.inputs[0] is None:
            return "Loop without a trip count M runs until its condition is false"
        if _has_cond(node) and _body_condition(body) is None:
            return "the body's condition output depends on data (the loop may end early)"
        carried = _present(node.inputs[2:])
    else:
        states = len(node.inputs) - node.attrs["num_scan_inputs"]
        carried = _present(node.inputs[:states])
        if node.attrs["num_scan_inputs"] < 1:
            return "Scan without scan inputs"
    for v in (*carried, *body.outputs):
        if v.type is not None and not isinstance(v.type, TensorType):
            return f"carries %{v.name} of type {v.type} (not a tensor)"
    return None


def unroll_refusal(node: Node, budget: int = MAX_UNROLLED_NODES) -> str | None:
    """Why `node` (a Loop or Scan, its inputs as they stand now) is not unrolled with at most
    `budget` nodes added; None when it is."""
    reason = structural_refusal(node)
    if reason is not None:
        return reason
    trips = _loop_trips(node) if node.op == "Loop" else _scan_length(node)
    if isinstance(trips, str):
        return trips
    if trips > MAX_TRIPS:
        return f"{trips} iterations (unrolled up to {MAX_TRIPS})"
    size = trips * body_size(node.attrs["body"])
    if size > budget:
        return f"{trips} iterations of its body make {size} nodes (unrolled up to {budget})"
    return None


def unroll_loops(graph: Graph, budget: int = MAX_UNROLLED_NODES) -> int:
    """Unroll the Loop and Scan nodes of `graph` (not those inside subgraphs) that
    unroll_refusal accepts, in order, within `budget` nodes in all; how many nodes that
    added (0: the graph is unchanged)."""
    if not any(n.op in UNROLLED_OPS for n in graph.nodes):
        return 0
    result: list[Node] = []
    mapping: dict[Value, Value] = {}
    added = 0
    for node in graph.nodes:
        if node.op not in UNROLLED_OPS or unroll_refusal(node, budget - added) is not None:
            result.append(node)
            continue
        builder = _Builder(graph, node)
        finals = _unroll_loop(builder, node) if node.op == "Loop" else _unroll_scan(builder, node)
        for outer, final in zip(node.outputs, finals):
            if outer is None or final is None or final is outer:
                continue
            if outer in graph.outputs:  # the graph's output keeps its value (and name)
                builder.add("Identity", [final], {}, out=outer)
            else:
                mapping[outer] = final
        result.extend(builder.nodes)
        added += len(builder.nodes)
    if not added:
        return 0
    graph.nodes = result
    if mapping:
        replace_many(graph, mapping)
    return added


def _has_cond(node: Node) -> bool:
    """Whether a Loop has a cond input (else it runs M times, whatever its body says)."""
    return len(node.inputs) > 1 and node.inputs[1] is not None


def _body_condition(body: Graph) -> bool | None:
    """The value of the body's condition output where data cannot change it: the constant,
    or True for the condition input passed through (directly or by Identity): the loop
    runs as long as it started. None where it is computed."""
    if len(body.outputs) < 1 or len(body.inputs) < 2:
        return None
    cond, cond_in = body.outputs[0], body.inputs[1]
    while cond.producer is not None and cond.producer.op == "Identity":
        source = cond.producer.inputs[0]
        if source is None:
            return None
        cond = source
    if cond is cond_in:
        return True
    data = cond.constant
    if data is None or np.size(data) != 1:
        return None
    return bool(np.asarray(data).reshape(()))


def _loop_trips(node: Node) -> int | str:
    """The iterations a Loop runs, or why that is not known now."""
    m = node.inputs[0]
    if m is None or m.constant is None or np.size(m.constant) != 1:
        return "its trip count M is computed at run time"
    trips = max(int(np.asarray(m.constant).reshape(())), 0)
    if _has_cond(node):  # without a cond input the body's condition is ignored (ONNX)
        cond = node.inputs[1]
        assert cond is not None
        if cond.constant is None or np.size(cond.constant) != 1:
            return "its condition is computed at run time"
        if not bool(np.asarray(cond.constant).reshape(())):
            trips = 0
        if _body_condition(node.attrs["body"]) is False:
            trips = min(trips, 1)  # the first iteration ends it
    body = node.attrs["body"]
    if trips == 0 and len(body.outputs) > len(body.inputs) - 1:
        return "it runs zero times and has scan outputs (their shape is the body's)"
    return trips


def _scan_axes(node: Node, key: str, count: int) -> list[int]:
    return list(node.attrs[key] or (0,) * count)


def _scan_length(node: Node) -> int | str:
    """The static length of a Scan's scan inputs, or why it has none."""
    count = node.attrs["num_scan_inputs"]
    states = len(node.inputs) - count
    lengths = set()
    for value, axis in zip(
        _present(node.inputs[states:]), _scan_axes(node, "scan_input_axes", count)
    ):
        t = value.type
        if not (isinstance(t, TensorType) and t.dims is not None):
            return "a scan input has no known rank"
        if not -len(t.dims) <= axis < len(t.dims):
            return f"scan input axis {axis} is out of range for %{value.name}"
        length = t.dims[axis % len(t.dims)]
        if not isinstance(length, int):
            return f"scan input %{value.name} has a symbolic length"
        lengths.add(length)
    if len(lengths) != 1:
        return f"scan inputs of different lengths {sorted(lengths)}"
    (length,) = lengths
    if length == 0:
        return "it scans zero iterations (its outputs' shape is the body's)"
    return length


class _Builder:
    """New nodes for `graph` in `nodes` (not yet in graph.nodes), typed as they are made."""

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node = graph, node
        first = next((v.name for v in node.outputs if v is not None), node.op.lower())
        self.label = node.name or first  # the new nodes' names start with it
        self.nodes: list[Node] = []
        self.constants: dict[tuple, Value] = {}
        self.body_constants: dict[Value, Value] = {}  # a body's Constant -> its one copy

    def add(self, op: str, inputs: list, attrs: dict, hint: str = "", out: Value | None = None):
        where = f"{self.label}/{op.lower()}{len(self.nodes)}"
        made = Node(op, inputs, [], fill_attrs(get_schema(op), attrs, where), where)
        if out is None:
            out = Value(self.graph.unique_name(hint or op.lower()))
        out.producer = made
        made.outputs = [out]
        if op == "Constant":  # refresh_node_types leaves Constants as they are
            out.type = infer_outputs(get_schema(op), made)[0]
        else:
            refresh_node_types(made)
        self.nodes.append(made)
        return out

    def constant(self, data: np.ndarray, hint: str) -> Value:
        key = (data.dtype.str, data.shape, data.tobytes())
        if key not in self.constants:
            self.constants[key] = self.add("Constant", [], {"value": data}, hint)
        return self.constants[key]

    def body(self, body: Graph, mapping: dict, tag: str) -> None:
        """One iteration: the body's nodes reading `mapping`'s values for its inputs (and
        filling it with their outputs' copies); Constants are made once for all iterations."""
        for inner in body.nodes:
            if inner.op == "Constant" and inner.outputs[0] in self.body_constants:
                mapping[inner.outputs[0]] = self.body_constants[inner.outputs[0]]
                continue
            made = Node(
                inner.op,
                [None if v is None else mapping.get(v, v) for v in inner.inputs],
                [],
                {},
                f"{self.label}/{tag}/{inner.name or inner.op.lower()}",
            )
            made.decomposition = inner.decomposition  # shared: a body is never mutated
            for key, attr in inner.attrs.items():
                made.attrs[key] = (
                    clone_graph(attr, self.graph, mapping) if isinstance(attr, Graph) else attr
                )
            for out in inner.outputs:
                if out is None:
                    made.outputs.append(None)
                    continue
                copy = Value(self.graph.unique_name(f"{out.name}_{tag}"), out.type, made)
                mapping[out] = copy
                made.outputs.append(copy)
            if inner.op == "Constant":
                self.body_constants[inner.output(0)] = made.output(0)
            else:
                refresh_node_types(made)
            self.nodes.append(made)

    def stack(self, values: list[Value], axis: int, out: Value | None) -> Value:
        """`values` (same shape) stacked along a new `axis`: Unsqueeze each, one Concat."""
        t = values[0].type
        if isinstance(t, TensorType) and t.dims is not None and axis < 0:
            axis += len(t.dims) + 1
        axes = self.constant(np.asarray([axis], np.int64), "unroll_axes")
        parts = [self.add("Unsqueeze", [v, axes], {}, f"{v.name}_stacked") for v in values]
        return self.add("Concat", parts, {"axis": axis}, out=out)


def _unroll_loop(builder: _Builder, node: Node) -> list[Value | None]:
    body: Graph = node.attrs["body"]
    trips = _loop_trips(node)
    assert isinstance(trips, int)
    carried = _present(node.inputs[2:])
    num_carried = len(body.inputs) - 2
    index_dtype = _numpy_dtype(body.inputs[0], np.int64)
    cond_in = builder.constant(np.asarray(True), "loop_cond")
    scanned: list[list[Value]] = [[] for _ in body.outputs[1 + num_carried :]]
    for t in range(trips):
        mapping: dict[Value, Value] = {
            body.inputs[0]: builder.constant(np.asarray(t, index_dtype), "loop_iteration"),
            body.inputs[1]: cond_in,
        }
        mapping.update(zip(body.inputs[2:], carried))
        builder.body(body, mapping, f"i{t}")
        results = [mapping.get(v, v) for v in body.outputs]
        carried = results[1 : 1 + num_carried]
        for values, v in zip(scanned, results[1 + num_carried :]):
            values.append(v)
    outs = list(node.outputs)
    scan_outs = outs[num_carried:]
    stacked = [
        None if out is None else builder.stack(values, 0, out)
        for values, out in zip(scanned, scan_outs)
    ]
    return [*carried, *stacked]


def _unroll_scan(builder: _Builder, node: Node) -> list[Value | None]:
    body: Graph = node.attrs["body"]
    length = _scan_length(node)
    assert isinstance(length, int)
    count = node.attrs["num_scan_inputs"]
    states = len(node.inputs) - count
    in_axes = _scan_axes(node, "scan_input_axes", count)
    in_dirs = _scan_axes(node, "scan_input_directions", count)
    num_out = len(body.outputs) - states
    out_axes = _scan_axes(node, "scan_output_axes", num_out)
    out_dirs = _scan_axes(node, "scan_output_directions", num_out)
    current = _present(node.inputs[:states])
    scanned: list[list[Value]] = [[] for _ in range(num_out)]
    for t in range(length):
        mapping: dict[Value, Value] = dict(zip(body.inputs[:states], current))
        for inner, x, axis, reverse in zip(
            body.inputs[states:], _present(node.inputs[states:]), in_axes, in_dirs
        ):
            index = builder.constant(
                np.asarray(length - 1 - t if reverse else t, np.int64), "scan_index"
            )
            mapping[inner] = builder.add("Gather", [x, index], {"axis": axis}, f"{inner.name}_i{t}")
        builder.body(body, mapping, f"i{t}")
        results = [mapping.get(v, v) for v in body.outputs]
        current = results[:states]
        for values, v in zip(scanned, results[states:]):
            values.append(v)
    stacked: list[Value | None] = []
    for values, out, axis, reverse in zip(scanned, node.outputs[states:], out_axes, out_dirs):
        stacked.append(
            None if out is None else builder.stack(values[::-1] if reverse else values, axis, out)
        )
    return [*current, *stacked]


def _present(values: list[Value | None]) -> list[Value]:
    """`values`, none of them omitted (structural_refusal checked that)."""
    present = [v for v in values if v is not None]
    assert len(present) == len(values), "an omitted Loop / Scan input"
    return present


def _numpy_dtype(value: Value, default) -> np.dtype:
    t = value.type
    return np.dtype(t.dtype.numpy) if isinstance(t, TensorType) else np.dtype(default)
