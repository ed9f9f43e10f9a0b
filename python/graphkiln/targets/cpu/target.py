# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu target: the full pass pipeline, then a plan per input shape run by the C++ core
(graphkiln._core.Executor: one call per run, GIL released, one arena).

An op without a CPU kernel is a compile-time error, unless `fallback="ref"` is given: then
the graph is cut into segments, and the nodes the cpu target lacks run on the ref target's
numpy kernels between plans."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ...ir import Graph, Node, TensorType, Value
from ..base import Executable, Target
from ..concurrency import OPTION_HELP, max_concurrency
from .lower import LoweringError, static_dims
from .saved_plan import saved_segments, segment_data
from .segments import Segment, split_segments
from .specialize import shape_deciding_inputs, specialize
from .table import LOWERINGS
from .threads import num_threads


class CpuTarget(Target):
    name = "cpu"
    options = {"fallback": "'ref' runs ops the cpu target lacks on the ref target "
                           "(default: such ops are a compile error)",
               # graphkiln.tuning
               "exhaustive_tune": "True measures the candidate configurations of every "
                                  "tunable kernel and stores the winners in the tuning "
                                  "database (GRAPHKILN_TUNING_DB)",
               "tuning": "False ignores the tuning database (heuristic kernel choices only; "
                         "default: the database's choices where it has them)",
               "max_concurrency": OPTION_HELP + " (cpu default: the physical cores)"}

    def passes(self, options: dict) -> list:
        from ...passes.pipelines import FULL

        return list(FULL)

    def compile(self, graph: Graph, options: dict) -> "CpuExecutable":
        fallback = options.get("fallback")
        if fallback not in (None, "ref"):
            raise ValueError(f"fallback={fallback!r}: accepted values are None and 'ref'")
        if fallback is None:
            missing = unsupported_nodes(graph, static=False)
            if missing:
                raise LoweringError.missing("cpu", missing, fallback="ref")
        return CpuExecutable(graph, fallback == "ref", _tune_mode(options),
                             max_contexts=_max_contexts(options))

    def unsupported_nodes(self, graph: Graph) -> list[Node]:
        """The nodes without a kernel (lower_support.node_supported: the lowering table, its
        `supports` predicates, static dims and kernel dtypes), as compile decides: an op
        without a lowering always; one refused for its attributes, dtypes or shapes only in a
        graph with static input dims and unless it reads small integer inputs
        (shape_deciding_inputs), as plans made per input shape and value decide those."""
        static = _static(graph.inputs)
        no_lowering = set(unsupported_nodes(graph, static=False))
        return [n for n in unsupported_nodes(graph, static=static)
                if n in no_lowering or not shape_deciding_inputs(graph, [n])]

    def from_saved(self, graph: Graph, options: dict, items: list) -> "CpuExecutable":
        """The executable of a loaded program from its saved plan (saved_plan.py): no
        lowering, the kernels take the saved packed constants back. The caller has checked
        that the saved plan_key() equals this machine's."""
        return CpuExecutable(graph, options.get("fallback") == "ref", _tune_mode(options),
                             saved=items, max_contexts=_max_contexts(options))


def _max_contexts(options: dict) -> int:
    from .threads import physical_cores

    return max_concurrency(options, default=physical_cores())


def _tune_mode(options: dict) -> str:
    return ("exhaustive" if options.get("exhaustive_tune")
            else "lookup" if options.get("tuning", True) else "off")


def unsupported_nodes(graph: Graph, static: bool = True) -> list[Node]:
    """Nodes the cpu target cannot run; with static=False, only those of ops it has no
    lowering for at all."""
    from .lower_support import node_supported

    return [n for n in graph.nodes
            if n.op != "Constant" and not node_supported(n, LOWERINGS, static)]


MAX_PLANS = 32  # plans kept per program (least recently used dropped first)


class CpuExecutable(Executable):
    """Plans keyed by the input shapes and, for the small integer inputs that decide shapes
    (found on the first plan), their values.

    Threads: run() may be called from several threads at once. The plan cache is guarded by
    a lock; a missing plan is built once (by the first thread asking, the others wait for
    it), outside the lock, so runs of other shapes go on meanwhile. A run holds its plan's
    segments, so evicting them from the cache never disturbs it. Each plan's executor takes
    an execution context per run (at most max_contexts at once)."""

    def __init__(self, graph: Graph, fallback: bool, tune: str = "lookup",
                 saved: list | None = None, max_contexts: int = 1):
        self.graph = graph
        self.max_contexts = max_contexts
        self._lock = threading.Lock()
        self._building: dict[tuple, threading.Event] = {}
        self._value_inputs_known = False
        self.fallback = fallback
        self.tune = tune  # graphkiln.tuning mode: "lookup", "exhaustive" or "off"
        self.threads = num_threads()
        self.profiling = False
        self.value_inputs: list[int] = []
        self._plans: OrderedDict[tuple, list[Segment]] = OrderedDict()
        self.plan_source = "lowered"   # "saved": the first plan came from a saved program
        if saved is not None:
            if not _static(graph.inputs):
                raise LoweringError("a saved plan needs a graph whose inputs have static shapes")
            shapes = tuple(static_dims(v) for v in graph.inputs)
            self._plans[(shapes, ())] = saved_segments(saved, self.threads, list(graph.inputs),
                                                       list(graph.outputs), max_contexts)
            self.plan_source = "saved"
        elif _static(graph.inputs):
            shapes = tuple(static_dims(v) for v in graph.inputs)
            if not self._needs_values(self.graph, shapes):
                self._segments(shapes, None)

    def _needs_values(self, graph: Graph, shapes: tuple) -> bool:
        """Whether some node runs natively only once small integer inputs are known: then
        remember those inputs (plans are made per value at run time)."""
        if self.fallback:
            return False
        specialized = graph if _static(graph.inputs) else specialize(graph, shapes)
        missing = unsupported_nodes(specialized)
        if not missing:
            return False
        self.value_inputs = shape_deciding_inputs(specialized, missing)
        if not self.value_inputs:
            raise LoweringError.missing("cpu", missing, "no kernel for these attributes or "
                                        "dynamic shapes", fallback="ref")
        return True

    def _segments(self, shapes: tuple, arrays) -> list[Segment]:
        values = {i: arrays[i] for i in self.value_inputs} if arrays is not None else {}
        key = (shapes, tuple(np.asarray(a).tobytes() for a in values.values()))
        while True:
            with self._lock:
                segments = self._plans.get(key)
                if segments is not None:
                    self._plans.move_to_end(key)
                    return segments
                building = self._building.get(key)
                if building is None:
                    building = self._building[key] = threading.Event()
                    break
            building.wait()  # another thread builds this plan; then look again
        try:
            segments = self._build(shapes, values)
            with self._lock:
                self._plans[key] = segments
                if len(self._plans) > MAX_PLANS:
                    self._plans.popitem(last=False)
        finally:
            with self._lock:
                del self._building[key]
            building.set()
        return segments

    def _build(self, shapes: tuple, values: dict) -> list[Segment]:
        if _static(self.graph.inputs) and not values:
            graph = self.graph
        else:
            graph = specialize(self.graph, shapes, values)
        segments = split_segments(graph, self.fallback, self.threads, self.tune,
                                  self.max_contexts)
        for segment in segments:
            segment.set_profiling(self.profiling)
        return segments

    def saved_plan(self) -> list | None:
        """The plan made for the graph's static input shapes as data to save (see
        saved_plan.py), or None when there is none (dynamic shapes, plans per input value)."""
        if not _static(self.graph.inputs) or self.value_inputs:
            return None
        shapes = tuple(static_dims(v) for v in self.graph.inputs)
        segments = self._plans.get((shapes, ()))
        return None if segments is None else [segment_data(s) for s in segments]

    def run(self, inputs) -> list:
        arrays = [np.asarray(a, order="C") for a in inputs]
        shapes = tuple(a.shape for a in arrays)
        if not self._value_inputs_known:
            with self._lock:  # the first run decides, once, which inputs key the plans
                if not self._value_inputs_known:
                    if not self._plans and not self.value_inputs:
                        self._needs_values(self.graph, shapes)
                    self._value_inputs_known = True
        segments = self._segments(shapes, arrays)
        graph_inputs = segments[0].graph_inputs if segments else []
        env: dict[Value, object] = dict(zip(graph_inputs, arrays))
        for segment in segments:
            segment.run(env)
        outputs = segments[-1].graph_outputs if segments else []
        return [env[v] if v in env else np.asarray(v.constant) for v in outputs]

    def set_profiling(self, on: bool) -> None:
        """Time every kernel call of the following runs (see step_times)."""
        with self._lock:
            self.profiling = on
            plans = list(self._plans.values())
        for segments in plans:
            for s in segments:
                s.set_profiling(on)

    def step_times(self) -> list[tuple[str, str, float, int]]:
        """(kernel, node name, total ms, runs) per kernel call of every plan, while profiling."""
        with self._lock:
            plans = list(self._plans.values())
        return [t for segments in plans for s in segments for t in s.step_times()]

    def plan_summary(self) -> dict:
        """Steps, kernels and arena bytes of the plans built so far (for stats)."""
        with self._lock:
            plans = list(self._plans.values())
        out = {"plans": len(plans), "plan_source": self.plan_source,
               "max_concurrency": self.max_contexts}
        contexts = context_bytes = 0
        for segments in plans:
            out["steps"] = sum(s.num_steps for s in segments)
            out["arena_bytes"] = sum(s.arena_bytes for s in segments)
            out["ref_nodes"] = sum(s.ref_nodes for s in segments)
            for s in segments:
                created = getattr(getattr(s, "executor", None), "contexts_created", 0)
                contexts += created
                context_bytes += created * s.arena_bytes
        # execution contexts of every plan and segment, and the arena bytes they hold
        out["contexts"] = contexts
        out["context_bytes"] = context_bytes
        return out


def _static(values: list[Value]) -> bool:
    return all(isinstance(v.type, TensorType) and v.type.dims is not None
               and all(isinstance(d, int) for d in v.type.dims) for v in values)
