# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A specialized graph as segments run in order: plans for the C++ executor and, only with
fallback='ref', runs of nodes the cpu target lacks, evaluated by the ref target."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, Value
from ...ir.graph import captured_values, node_reads, node_subgraphs
from .core_executor import build_executor
from ..native.lower import LoweringContext, LoweringError
from .lower_fused import memoized_family_checks
from ..native.lower_loops import refusal_detail
from ..native.lower_support import node_supported
from ..native.bounded import bounded_outputs, cut_bounded
from .table import LOWERINGS, SUPPORT


class Segment:
    graph_inputs: list[Value] = []
    graph_outputs: list[Value] = []
    num_steps = 0
    arena_bytes = 0
    naive_bytes: int | None = 0  # None: not known (a plan loaded from saved data)
    ref_nodes = 0

    def run(self, env: dict) -> None:
        raise NotImplementedError

    def set_profiling(self, on: bool) -> None:
        pass

    def step_times(self) -> list:
        return []


class ExecutorSegment(Segment):
    """A segment run by a _core.Executor (set by the subclass, with inputs, outputs and
    input_dtypes)."""

    def set_profiling(self, on: bool) -> None:
        self.executor.set_profiling(on)

    def step_times(self) -> list:
        return self.executor.step_times()

    def run(self, env: dict) -> None:
        arrays = [
            np.asarray(env[v], dtype=dt, order="C") for v, dt in zip(self.inputs, self.input_dtypes)
        ]
        env.update(zip(self.outputs, cut_bounded(self.executor.run(arrays), self.bounded)))

    # outputs a bounded kernel writes (bounded_outputs: an index, or a (index, axis,
    # count index) cut), set by builders
    bounded: list = []


class PlanSegment(ExecutorSegment):
    """A plan lowered from nodes (the tuning database applied) and built."""

    def __init__(
        self,
        nodes: list[Node],
        inputs: list[Value],
        outputs: list[Value],
        threads: int,
        tune: str = "lookup",
        max_contexts: int = 1,
        packing=None,
        arena_pool=None,
        build_behind: bool = False,
    ):
        from ...tuning.cpu import tune_plan

        plan = LoweringContext(nodes, inputs, outputs, LOWERINGS).lower_all()
        # tuning hook (graphkiln.tuning): tuned kernel attrs from the database, or measured
        self.tuning = tune_plan(plan, threads, tune)
        self.inputs, self.outputs = inputs, outputs
        self.input_dtypes = [v.type.dtype.numpy for v in inputs]

        def specs(slots):
            return [(plan.slots[s].dtype.numpy, list(plan.slots[s].dims)) for s in slots]

        steps, keys = plan.executor_steps(), None
        self.bounded = bounded_outputs(steps)
        if packing is not None:  # packing_cache.py: packed weights other plans made
            steps, keys = packing.offer(steps, plan.constants)
        self.executor = build_executor(
            steps,
            plan.constants,
            plan.arena_bytes,
            specs(plan.input_slots),
            specs(plan.output_slots),
            threads,
            max_contexts,
            arena_pool,
            build_behind,
        )
        if packing is not None:  # once its kernels are built: not before the first run
            packing.remember_later(keys, self.executor, steps, plan.constants)
        self.plan = plan
        self.num_steps = len(plan.steps)
        self.arena_bytes = plan.arena_bytes
        self.naive_bytes = plan.naive_bytes


class RefSegment(Segment):
    """Nodes run one by one on ref. A node with subgraphs (If, Loop, Scan) is given the
    outer values its subgraphs read as well as its inputs."""

    def __init__(self, nodes: list[Node]):
        self.nodes = nodes
        self.ref_nodes = len(nodes)
        self.captures = [
            list(dict.fromkeys(v for g in node_subgraphs(n) for v in captured_values(g)))
            for n in nodes
        ]

    def run(self, env: dict) -> None:
        from ..ref.target import evaluate

        def read(v):
            return env[v] if v in env else v.constant

        for node, captures in zip(self.nodes, self.captures):
            args = [None if v is None else read(v) for v in node.inputs]
            captured = {v: read(v) for v in captures}
            for value, result in zip(node.outputs, evaluate(node, args, captured)):
                if value is not None:
                    env[value] = result


def split_segments(
    graph: Graph,
    fallback: bool,
    threads: int,
    tune: str = "lookup",
    max_contexts: int = 1,
    packing=None,
    arena_pool=None,
    build_behind: bool = False,
) -> list[Segment]:
    """The graph's plan segments. packing (packing_cache.py) and arena_pool (an ArenaPool
    of core_executor.new_arena_pool()) are what the plans of one program share;
    build_behind: see core_executor.build_executor."""
    with memoized_family_checks():  # each Fused node's check once, not per caller
        shared = (packing, arena_pool, build_behind)
        return _split_segments(graph, fallback, threads, tune, max_contexts, shared)


def _split_segments(
    graph: Graph, fallback: bool, threads: int, tune: str, max_contexts: int, shared: tuple
) -> list[Segment]:
    nodes = [n for n in graph.nodes if n.op != "Constant"]
    runs: list[tuple[bool, list[Node]]] = []
    for node in nodes:
        native = node_supported(node, SUPPORT)
        if not native and not fallback:
            detail = refusal_detail(node, "no kernel, or dynamic shapes")
            raise LoweringError.missing("cpu", [node], detail, fallback="ref")
        if runs and runs[-1][0] == native:
            runs[-1][1].append(node)
        else:
            runs.append((native, [node]))
    if len(runs) <= 1 and (not runs or runs[0][0]):
        segments: list[Segment] = [
            PlanSegment(
                nodes, list(graph.inputs), list(graph.outputs), threads, tune, max_contexts, *shared
            )
        ]
    else:
        segments = _mixed(graph, runs, threads, tune, max_contexts, shared)
    for s in segments:
        s.graph_inputs, s.graph_outputs = list(graph.inputs), list(graph.outputs)
    return segments


def _mixed(
    graph: Graph, runs, threads: int, tune: str, max_contexts: int, shared: tuple
) -> list[Segment]:
    later_reads: list[set[Value]] = []
    reads: set[Value] = set(graph.outputs)
    for _, run_nodes in reversed(runs):
        later_reads.append(set(reads))
        for n in run_nodes:
            reads.update(node_reads(n))  # subgraph captures too
    later_reads.reverse()
    segments: list[Segment] = []
    for (native, run_nodes), after in zip(runs, later_reads):
        if not native:
            segments.append(RefSegment(run_nodes))
            continue
        produced = {v for n in run_nodes for v in n.outputs if v is not None}
        inputs: list[Value] = []
        for n in run_nodes:
            for v in node_reads(n):  # an If compiled in line reads its branches' captures
                if v not in produced and v.constant is None and v not in inputs:
                    inputs.append(v)
        outputs = [v for n in run_nodes for v in n.outputs if v is not None and v in after]
        segments.append(
            PlanSegment(run_nodes, inputs, outputs, threads, tune, max_contexts, *shared)
        )
    return segments
