# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Graph / Node / Value: the IR's containers. Nodes are kept in execution order."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GraphError
from .types import ValueType

if TYPE_CHECKING:
    from .decomposition import Decomposition


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.]+\Z")


def ref(name: str) -> str:
    """How the text form refers to a value: %name, or %"name" when it has other characters."""
    return f"%{name}" if _PLAIN_NAME.match(name) else "%" + json.dumps(name)


class Value:
    """A typed edge: produced by one node (or a graph input) and read by any number of nodes."""

    __slots__ = ("name", "type", "producer")

    def __init__(self, name: str, type: ValueType | None = None, producer: Node | None = None):
        self.name = name
        self.type = type
        self.producer = producer

    def __repr__(self) -> str:
        return f"{ref(self.name)}: {self.type}"

    @property
    def constant(self) -> np.ndarray | None:
        """The value's data when it comes from a Constant node, else None."""
        node = self.producer
        if node is not None and node.op == "Constant":
            return node.attrs["value"]
        return None


class Node:
    """One operation: `op` names a schema in ir.schema; omitted optional inputs/outputs are None."""

    __slots__ = ("op", "inputs", "outputs", "attrs", "name", "decomposition")

    def __init__(
        self,
        op: str,
        inputs: list[Value | None],
        outputs: list[Value | None],
        attrs: dict[str, Any],
        name: str = "",
    ):
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.name = name
        # the node in simpler ops, for targets that cannot run it (ir/decomposition.py)
        self.decomposition: Decomposition | None = None

    def input(self, i: int) -> Value:
        """Input `i` where the op requires it: a GraphError when it is omitted (None)."""
        value = self.inputs[i]
        if value is None:
            raise GraphError(f"{self.op} {self.name!r}: input {i} is omitted")
        return value

    def output(self, i: int) -> Value:
        """Output `i` where the op always has it: a GraphError when it is omitted (None)."""
        value = self.outputs[i]
        if value is None:
            raise GraphError(f"{self.op} {self.name!r}: output {i} is omitted")
        return value

    def __repr__(self) -> str:
        ins = ", ".join("_" if v is None else ref(v.name) for v in self.inputs)
        outs = ", ".join("_" if v is None else ref(v.name) for v in self.outputs)
        return f"{outs} = {self.op}({ins})"


class Graph:
    """A function from `inputs` to `outputs`. A subgraph's `parent` is its enclosing graph:
    its nodes may read values of the parent (captures), never the reverse."""

    def __init__(self, name: str = "main", parent: Graph | None = None):
        self.name = name
        self.parent = parent
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.nodes: list[Node] = []
        self._names: set[str] = set()
        self._counter = itertools.count()

    # -- naming -------------------------------------------------------------------------
    def _taken(self, name: str) -> bool:
        g: Graph | None = self
        while g is not None:
            if name in g._names:
                return True
            g = g.parent
        return False

    def unique_name(self, hint: str = "") -> str:
        if hint and not self._taken(hint):
            self._names.add(hint)
            return hint
        base = hint or "v"
        while True:
            name = f"{base}_{next(self._counter)}"
            if not self._taken(name):
                self._names.add(name)
                return name

    # -- building -----------------------------------------------------------------------
    def add_input(self, name: str, type: ValueType | None) -> Value:
        value = Value(self.unique_name(name), type)
        self.inputs.append(value)
        return value

    def add_node(
        self,
        op: str,
        inputs: Iterable[Value | None],
        attrs: dict | None = None,
        num_outputs: int | None = None,
        output_names: list[str | None] | None = None,
        name: str = "",
        infer: bool = True,
    ) -> Node:
        """Append a node after filling default attributes and inferring output types."""
        from .schema import get_schema, fill_attrs, infer_outputs

        schema = get_schema(op)
        attrs = fill_attrs(schema, dict(attrs or {}), where=name or op)
        if output_names is None:
            count = num_outputs if num_outputs is not None else schema.min_outputs
            output_names = [op.lower()] * count
        node = Node(op, list(inputs), [], attrs, name)
        node.outputs = [
            None if n is None else Value(self.unique_name(n), None, node) for n in output_names
        ]
        if infer:
            for value, type_ in zip(node.outputs, infer_outputs(schema, node)):
                if value is not None:
                    value.type = type_
        self.nodes.append(node)
        return node

    def add(self, op: str, *inputs: Value | None, **attrs) -> Value:
        """Append a single-output node; returns its output."""
        return self.add_node(op, inputs, attrs).output(0)

    def constant(self, data, name: str = "const") -> Value:
        array = np.asarray(data)
        if array.dtype.kind in "US":
            array = array.astype(object)
        return self.add_node("Constant", [], {"value": array}, output_names=[name]).output(0)

    # -- queries ------------------------------------------------------------------------
    def users(self) -> dict[Value, list[Node]]:
        """Map each value to the nodes of this graph (and nested subgraphs) reading it."""
        result: dict[Value, list[Node]] = {}
        for node in self.nodes:
            for v in node_reads(node):
                result.setdefault(v, []).append(node)
        return result

    def subgraphs(self) -> list[Graph]:
        return [g for node in self.nodes for g in node_subgraphs(node)]

    def verify(self) -> None:
        """Check that every read value is defined before use and names are unique."""
        from .verify import verify_graph

        verify_graph(self)

    def __str__(self) -> str:
        from .printer import print_graph

        return print_graph(self)


def node_subgraphs(node: Node) -> list[Graph]:
    return [v for v in node.attrs.values() if isinstance(v, Graph)]


def node_reads(node: Node) -> list[Value]:
    """Values a node reads: its inputs and, through subgraphs, captured outer values."""
    reads = [v for v in node.inputs if v is not None]
    for sub in node_subgraphs(node):
        reads.extend(captured_values(sub))
    return reads


def captured_values(graph: Graph) -> list[Value]:
    """Values of enclosing graphs read from inside `graph` (at any depth)."""
    defined = set(graph.inputs)
    for node in graph.nodes:
        defined.update(v for v in node.outputs if v is not None)
    seen: dict[Value, None] = {}
    for node in graph.nodes:
        for v in node_reads(node):
            if v not in defined:
                seen[v] = None
    return list(seen)


__all__ = [
    "Graph",
    "Node",
    "Value",
    "GraphError",
    "captured_values",
    "node_reads",
    "node_subgraphs",
]
