# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Program -> document: plain maps, lists, numbers and strings that both containers write.

    {"producer": "graphkiln 0.1.0",
     "graph": GRAPH,                                  # as imported
     "compiled": null | {"target": "ref", "options": {...}, "graph": GRAPH,
                         "passes": [{"name", "ms", "nodes_after"}], "compile_ms": 12.5,
                         "gpu_arch"?: "sm_90", "cpu_plan"?: see cpu_plan.py,
                         "gpu_plans"?: see gpu_plan.py}}
    GRAPH = {"name", "inputs": [VALUE], "nodes": [NODE], "outputs": [id]}
    VALUE = {"id": n, "name": "x", "type": TYPE | null}    ids count definitions in order
    NODE  = {"op", "name"?, "inputs": [id | null], "outputs": [VALUE | null],
             "attrs"?: [[name, kind, value]], "decomposition"?: GRAPH}
    TYPE  = ["tensor", "f32", [1, "N"] | null] | ["sequence", TYPE] | ["optional", TYPE]

Within one top-level graph every value gets the next id when it is defined: graph inputs,
then per node the values of its subgraphs, then its outputs. Attribute kinds are the
schema's (int, float, str, ints, floats, strs, dtype, tensor, graph) or "none" for an absent
optional attribute; a tensor is an index into the tensor table, a graph is a GRAPH.
A node's decomposition (ir/decomposition.py; built now if it was not yet) is a standalone
GRAPH with ids of its own (format version 5), written for the nodes of top-level graphs
and of decompositions only: those of If / Loop / Scan bodies are dropped, as no target
uses them there."""

from __future__ import annotations

import numpy as np

from ..errors import GraphError
from ..ir import DType, Graph, Node, OptionalType, SequenceType, TensorType, Value, get_schema
from ..version import __version__
from .checks import float_to_document
from .cpu_plan import cpu_plan_document
from .gpu_plan import FIELD as GPU_PLANS, gpu_plan_document
from .tensors import TensorTable


def program_document(program, table: TensorTable) -> dict:
    """The document of `program`; its tensors are added to `table`."""
    doc = {
        "producer": f"graphkiln {__version__}",
        "graph": GraphEncoder(table).graph(program.graph),
        "compiled": None,
    }
    if program.is_compiled and program.compiled_graph is not None:
        encoder = GraphEncoder(table)
        doc["compiled"] = {
            "target": program.target.name,
            "options": _options(program.options),
            "graph": encoder.graph(program.compiled_graph),
            "passes": [
                {"name": r.name, "ms": float_to_document(r.ms), "nodes_after": int(r.nodes_after)}
                for r in program.pass_records
            ],
            "compile_ms": float_to_document(program.compile_ms),
        }
        arch = getattr(program._executable, "arch", None)
        if arch:  # gpu: the ISA the program was compiled for
            doc["compiled"]["gpu_arch"] = str(arch)
        if program.target.name == "cpu":  # its plan and packed weights (cpu_plan.py)
            plan = cpu_plan_document(program._executable, encoder, table)
            if plan is not None:
                doc["compiled"]["cpu_plan"] = plan
        if program.target.name == "gpu":  # the shapes of its plans, rebuilt on load
            plans = gpu_plan_document(program._executable)
            if plans is not None:
                doc["compiled"][GPU_PLANS] = plans
    return doc


# Options that act once, while compiling, and must not run again when the program is loaded
# (tuning measurements: their winners are in the tuning database).
# `shapes`: the plans built ahead are saved with the program instead (cpu_plan.py; on gpu
# their shapes, gpu_plan.py, with those of the plans runs built).
COMPILE_TIME_ONLY = ("exhaustive_tune", "shapes")


def _options(options: dict) -> dict:
    out = {}
    for key, value in options.items():
        if key in COMPILE_TIME_ONLY:
            continue
        if not isinstance(value, (bool, int, float, str)):
            raise GraphError(
                f"cannot save compile option {key}={value!r}: only bool, int, "
                "float and str options are saved"
            )
        out[str(key)] = float_to_document(value) if isinstance(value, float) else value
    return out


def type_document(value_type):
    if value_type is None:
        return None
    if isinstance(value_type, TensorType):
        dims = None if value_type.dims is None else list(value_type.dims)
        return ["tensor", value_type.dtype.value, dims]
    if isinstance(value_type, SequenceType):
        return ["sequence", type_document(value_type.elem)]
    if isinstance(value_type, OptionalType):
        return ["optional", type_document(value_type.elem)]
    raise GraphError(f"cannot save value type {value_type!r}")


class GraphEncoder:
    """Numbers the values of one top-level graph (and its subgraphs) as it writes them."""

    def __init__(self, table: TensorTable):
        self.table = table
        self.ids: dict[Value, int] = {}

    def graph(self, graph: Graph, top: bool = True) -> dict:
        """`top`: a top-level (or decomposition) graph, whose nodes' decompositions are kept."""
        inputs = [self.define(v) for v in graph.inputs]
        nodes = [self.node(n, top) for n in graph.nodes]
        return {
            "name": graph.name,
            "inputs": inputs,
            "nodes": nodes,
            "outputs": [self.reference(v, f"output of graph {graph.name}") for v in graph.outputs],
        }

    def define(self, value: Value) -> dict:
        if value in self.ids:
            raise GraphError(f"value %{value.name} is defined twice")
        self.ids[value] = len(self.ids)
        return {"id": self.ids[value], "name": value.name, "type": type_document(value.type)}

    def reference(self, value: Value | None, where: str):
        if value is None:
            return None
        try:
            return self.ids[value]
        except KeyError:
            raise GraphError(f"{where}: %{value.name} is not defined before use") from None

    def node(self, node: Node, top: bool = True) -> dict:
        where = f"{node.op} node {node.name!r}"
        doc = {"op": node.op}
        if node.name:
            doc["name"] = node.name
        doc["inputs"] = [self.reference(v, where) for v in node.inputs]
        attrs = [self.attribute(node.op, key, value, where) for key, value in node.attrs.items()]
        doc["outputs"] = [None if v is None else self.define(v) for v in node.outputs]
        if attrs:
            doc["attrs"] = attrs
        body = node.decomposition.body() if top and node.decomposition is not None else None
        if body is not None:
            doc["decomposition"] = GraphEncoder(self.table).graph(body)
        return doc

    def attribute(self, op: str, key: str, value, where: str) -> list:
        spec = get_schema(op).attr_map.get(key)
        if spec is None:
            raise GraphError(f"{where}: op {op} has no attribute {key!r}")
        if value is None:
            return [key, "none", None]
        kind = spec.kind
        try:
            return [key, kind, self._attribute_value(kind, value)]
        except (TypeError, ValueError) as exc:
            raise GraphError(f"{where}: attribute {key!r} is not a valid {kind}: {exc}") from None

    def _attribute_value(self, kind: str, value):
        if kind == "int":
            return _int(value)
        if kind == "float":
            return float_to_document(value)
        if kind == "str":
            return _str(value)
        if kind == "ints":
            return [_int(v) for v in value]
        if kind == "floats":
            return [float_to_document(v) for v in value]
        if kind == "strs":
            return [_str(v) for v in value]
        if kind == "dtype":
            if not isinstance(value, DType):
                raise TypeError(f"{value!r} is not a DType")
            return value.value
        if kind == "tensor":
            if not isinstance(value, np.ndarray):
                raise TypeError(f"{type(value).__name__} is not a numpy array")
            DType.from_numpy(value.dtype)
            return self.table.add(value)
        if kind == "graph":
            if not isinstance(value, Graph):
                raise TypeError(f"{type(value).__name__} is not a Graph")
            return self.graph(value, top=False)
        raise TypeError(f"unknown attribute kind {kind}")


def _int(value) -> int:
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise TypeError(f"{value!r} is not an integer")


def _str(value) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"{value!r} is not a string")
