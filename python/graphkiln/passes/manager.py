# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Runs a pipeline of passes: skips disabled ones, times each, verifies the IR after each,
traces the IR when asked and lets a checker compare results after every pass."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from types import ModuleType
from collections.abc import Callable

from .. import env
from ..errors import CompileError, GraphError
from ..ir import Graph, print_graph
from .context import PassContext


@dataclass
class PassRecord:
    name: str
    ms: float
    nodes_after: int

    def as_dict(self) -> dict:
        return {"name": self.name, "ms": round(self.ms, 3), "nodes_after": self.nodes_after}


def pass_name(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[-1]


def disabled_passes(pipeline: list[ModuleType]) -> set[str]:
    raw = env.get("GRAPHKILN_DISABLE_PASSES", "") or ""
    names = {n.strip() for n in raw.split(",") if n.strip()}
    known = {pass_name(p) for p in pipeline}
    unknown = names - known
    if unknown:
        raise ValueError(
            f"GRAPHKILN_DISABLE_PASSES names unknown passes {sorted(unknown)}; "
            f"this pipeline has: {', '.join(sorted(known))}"
        )
    return names


def run_pipeline(
    graph: Graph,
    pipeline: list[ModuleType],
    ctx: PassContext,
    trace: bool | None = None,
    check: Callable[[str, Graph], None] | None = None,
    out=None,
    verify_each: bool = True,
) -> list[PassRecord]:
    """Run `pipeline` on `graph` in place. `check(pass_name, graph)` is called after each pass
    (e.g. to compare results with ref) and may raise to stop at the first bad pass.
    `verify_each=False` verifies the graph once, after the last pass (a pipeline run per
    input shape, such as the cpu target's specialization), unless tracing or checking."""
    if trace is None:
        trace = (env.get("GRAPHKILN_TRACE_COMPILE", "") or "") not in ("", "0")
    out = out or sys.stderr
    skip = disabled_passes(pipeline)
    verify_each = verify_each or trace or check is not None
    ran = [m for m in pipeline if pass_name(m) not in skip]
    records = []
    for module in ran:
        name = pass_name(module)
        start = time.perf_counter()
        module.run(graph, ctx)
        ms = (time.perf_counter() - start) * 1e3
        if verify_each or module is ran[-1]:
            try:
                graph.verify()
            except GraphError as exc:
                which = name if verify_each else ", ".join(pass_name(m) for m in ran)
                raise CompileError(f"pass {which} left an invalid graph: {exc}") from exc
        records.append(PassRecord(name, ms, count_nodes(graph)))
        if trace:
            print(f"// after {name}: {ms:.2f} ms, {records[-1].nodes_after} nodes", file=out)
            print(print_graph(graph, elide=True), file=out)
        if check is not None:
            check(name, graph)
    return records


def count_nodes(graph: Graph) -> int:
    """The nodes compile statistics count: those of the top-level graph but Constant (a
    node with subgraphs, such as If or Fused, counts once). `nodes_in`, every pass's
    `nodes_after` and `nodes_out` are all this count."""
    return sum(1 for n in graph.nodes if n.op != "Constant")
