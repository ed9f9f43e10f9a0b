# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu target: the full pass pipeline, then a plan per input shape run by the C++ core
(graphkiln._core.Executor: one call per run, GIL released, one arena).

An op without a CPU kernel is a compile-time error, unless `fallback="ref"` is given: then
the graph is cut into segments, and the nodes the cpu target lacks run on the ref target's
numpy kernels between plans."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, TensorType, Value
from ..base import Executable, Target
from .lower import LoweringError, static_dims
from .segments import Segment, split_segments
from .specialize import specialize
from .table import LOWERINGS
from .threads import num_threads


class CpuTarget(Target):
    name = "cpu"
    options = {"fallback": "'ref' runs ops the cpu target lacks on the ref target "
                           "(default: such ops are a compile error)"}

    def passes(self, options: dict) -> list:
        from ...passes.pipelines import FULL

        return list(FULL)

    def compile(self, graph: Graph, options: dict) -> "CpuExecutable":
        fallback = options.get("fallback")
        if fallback not in (None, "ref"):
            raise ValueError(f"fallback={fallback!r}: accepted values are None and 'ref'")
        if fallback is None:
            missing = unsupported_nodes(graph)
            if missing:
                ops = sorted({n.op for n in missing})
                raise LoweringError(
                    f"the cpu target has no kernel for {', '.join(ops)} (first: node "
                    f"{missing[0].name!r}); compile(..., fallback='ref') runs them on ref")
        return CpuExecutable(graph, fallback == "ref")


def unsupported_nodes(graph: Graph) -> list[Node]:
    from .lower_support import node_supported

    static = _static(graph.inputs)
    return [n for n in graph.nodes
            if n.op != "Constant" and not node_supported(n, LOWERINGS, static)]


class CpuExecutable(Executable):
    def __init__(self, graph: Graph, fallback: bool):
        self.graph = graph
        self.fallback = fallback
        self.threads = num_threads()
        self._plans: dict[tuple, list[Segment]] = {}
        if _static(graph.inputs):
            self._segments(tuple(static_dims(v) for v in graph.inputs))

    def _segments(self, shapes: tuple) -> list[Segment]:
        segments = self._plans.get(shapes)
        if segments is None:
            graph = self.graph if _static(self.graph.inputs) else specialize(self.graph, shapes)
            segments = split_segments(graph, self.fallback, self.threads)
            self._plans[shapes] = segments
        return segments

    def run(self, inputs) -> list:
        arrays = [np.asarray(a, order="C") for a in inputs]
        segments = self._segments(tuple(a.shape for a in arrays))
        graph_inputs = segments[0].graph_inputs if segments else []
        env: dict[Value, object] = dict(zip(graph_inputs, arrays))
        for segment in segments:
            segment.run(env)
        return [env[v] for v in segments[-1].graph_outputs] if segments else []

    def plan_summary(self) -> dict:
        """Steps, kernels and arena bytes of the plans built so far (for stats)."""
        out = {"plans": len(self._plans)}
        for segments in self._plans.values():
            out["steps"] = sum(s.num_steps for s in segments)
            out["arena_bytes"] = sum(s.arena_bytes for s in segments)
            out["ref_nodes"] = sum(s.ref_nodes for s in segments)
        return out


def _static(values: list[Value]) -> bool:
    return all(isinstance(v.type, TensorType) and v.type.dims is not None
               and all(isinstance(d, int) for d in v.type.dims) for v in values)
