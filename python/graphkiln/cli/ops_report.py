# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln ops --model M`: for each ONNX op of the model (subgraphs included), whether
graphkiln imports it and whether the chosen target runs it natively.

The target decides, as when it compiles: the model is imported, the target's passes run,
and `Target.unsupported_nodes` (cpu: its lowering table and `supports` predicates) names the
nodes it lacks. Each such IR node is credited to the ONNX node whose output it computes: the
IR keeps ONNX output names, so the first value named like an ONNX output at or after the
node (following its consumers) tells."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import onnx

DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass
class OpEntry:
    """One (domain, op type) of the model."""

    domain: str
    op: str
    opset: int | None
    count: int = 0
    in_subgraphs: int = 0  # of `count`, nodes inside If / Loop / Scan bodies
    not_imported: str = ""  # why graphkiln does not import it ("" when it does)
    lacking: list = field(default_factory=list)  # IR nodes the target cannot run

    @property
    def name(self) -> str:
        return self.op if self.domain in DEFAULT_DOMAINS else f"{self.domain}::{self.op}"


def walk_nodes(graph: onnx.GraphProto, depth: int = 0):
    """(node, depth) for every node of `graph` and, at any depth, of its subgraphs."""
    for node in graph.node:
        yield node, depth
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                yield from walk_nodes(sub, depth + 1)


def model_opsets(model: onnx.ModelProto) -> dict[str, int]:
    opsets = {("" if e.domain == "ai.onnx" else e.domain): e.version for e in model.opset_import}
    return opsets


def import_problem(op: str, domain: str, opsets: dict[str, int]) -> str:
    """Why graphkiln does not import `op` of `domain` at the model's opsets ("" if it does):
    the importer takes default-domain ops it has a converter for, and ops ONNX defines as a
    function (whose body it imports)."""
    from ..frontends.onnx.microsoft_ops import DOMAIN as MICROSOFT_DOMAIN
    from ..frontends.onnx.microsoft_ops import find_microsoft_converter
    from ..frontends.onnx.ops_table import TABLE, find_converter

    dom = "" if domain in DEFAULT_DOMAINS else domain
    opset = opsets.get(dom)
    if opset is None:
        return f"the model imports no opset of domain {domain or 'ai.onnx'!r}"
    if not dom and find_converter(op, opset)[0]:
        return ""
    if dom == MICROSOFT_DOMAIN:  # onnxruntime's contrib ops: frontends/onnx/microsoft_ops.py
        return find_microsoft_converter(op, opset)[1]
    try:
        schema = onnx.defs.get_schema(op, opset, dom)
    except (onnx.defs.SchemaError, TypeError):
        schema = None
    if schema is not None and (schema.has_function or schema.has_context_dependent_function):
        return ""  # imported as its ONNX function body
    if dom:
        return (
            "graphkiln imports ops of the default ONNX domain, ops ONNX defines as "
            "functions, and com.microsoft ops, only"
        )
    entries = TABLE.get(op)
    if entries:
        return f"graphkiln imports {op} from opset {entries[0][0]}"
    return "graphkiln does not import it"


def collect(model: onnx.ModelProto) -> tuple[dict[tuple[str, str], OpEntry], dict[str, tuple]]:
    """The model's ops, and ONNX output name -> (domain, op) of the node producing it."""
    opsets = model_opsets(model)
    entries: dict[tuple[str, str], OpEntry] = {}
    producers: dict[str, tuple[str, str]] = {}
    for node, depth in walk_nodes(model.graph):
        dom = "" if node.domain in DEFAULT_DOMAINS else node.domain
        key = (dom, node.op_type)
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = OpEntry(dom, node.op_type, opsets.get(dom))
            entry.not_imported = import_problem(node.op_type, dom, opsets)
        entry.count += 1
        entry.in_subgraphs += depth > 0
        for name in node.output:
            if name:
                producers.setdefault(name, key)
    return entries, producers


def lacking_nodes(graph, target, model_ops: set[str]) -> list:
    """(graph, node) for every node of `graph` and its subgraphs the target cannot run. Only
    the subgraphs of the model's own ops (If, Loop, Scan ...) are looked into: the body of a
    node the compiler made (Fused) is its kernel's business."""
    from ..ir.graph import node_subgraphs

    found = [(graph, n) for n in target.unsupported_nodes(graph)]
    for node in graph.nodes:
        if node.op in model_ops:
            for sub in node_subgraphs(node):
                found.extend(lacking_nodes(sub, target, model_ops))
    return found


def credit(graph, node, producers: dict[str, tuple]) -> tuple | None:
    """The (domain, op) of the ONNX node whose output `node` computes (None if unknown)."""
    from ..ir.graph import node_reads

    consumers: dict = {}
    for n in graph.nodes:
        for v in node_reads(n):
            consumers.setdefault(v, []).append(n)
    queue, seen = deque([node]), {id(node)}
    while queue:
        n = queue.popleft()
        for v in n.outputs:
            if v is not None and v.name in producers:
                return producers[v.name]
        for v in n.outputs:
            for c in consumers.get(v, []) if v is not None else []:
                if id(c) not in seen:
                    seen.add(id(c))
                    queue.append(c)
    return None


def report(model: onnx.ModelProto, graph_or_error, target, path: str) -> tuple[list[str], int]:
    """The lines to print and the exit code (1 when something is missing). `graph_or_error`
    is the imported graph, or the GraphkilnError importing it raised."""
    from ..compiler import compile_graph
    from ..targets.native.lower import node_label

    entries, producers = collect(model)
    opsets = model_opsets(model)
    named = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(opsets.items()))
    lines = [f"{path}: opsets {named}; target {target.name}"]
    checked = not isinstance(graph_or_error, Exception)
    others: dict[str, list] = {}
    if checked:
        compiled, _ = compile_graph(graph_or_error, target, {}, False, False)
        model_ops = {op for _, op in entries}
        for graph, node in lacking_nodes(compiled, target, model_ops):
            key = credit(graph, node, producers)
            if key in entries:
                entries[key].lacking.append(node)
            else:
                others.setdefault(node.op, []).append(node)
    missing = 0
    for entry in sorted(entries.values(), key=lambda e: (e.domain, e.op)):
        where = f" ({entry.in_subgraphs} inside subgraphs)" if entry.in_subgraphs else ""
        opset = f"opset {entry.opset}"
        if entry.not_imported:
            status, why = "MISSING", f" ({opset}): {entry.not_imported}"
        elif entry.lacking:
            ops = sorted({n.op for n in entry.lacking})
            imported_as = (
                "" if ops == [entry.op] else f" (as {', '.join(ops)}, once imported and optimized)"
            )
            status = "MISSING"
            why = (
                f" ({opset}): the {target.name} target cannot run it natively{imported_as}; "
                f"first: node {node_label(entry.lacking[0])!r}"
            )
        elif not checked:
            status = "unknown"
            why = (
                f": graphkiln imports it; the {target.name} target was not asked, as the "
                "model does not import (see below)"
            )
        else:
            status, why = "ok     ", ""
        missing += status != "ok     "
        lines.append(f"{status} {entry.name} x{entry.count}{where}{why}")
    for op, nodes in sorted(others.items()):
        missing += 1
        lines.append(
            f"MISSING {op} x{len(nodes)}: the {target.name} target cannot run this op, "
            f"which graphkiln made from the model's ops; first: node "
            f"{node_label(nodes[0])!r}"
        )
    if not checked:
        lines.append(f"the model does not import: {graph_or_error}")
    elif missing and target.name == "cpu":
        lines.append("--fallback ref runs the ops the cpu target lacks on ref")
    return lines, 1 if missing else 0
