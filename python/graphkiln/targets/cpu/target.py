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
from dataclasses import replace

import numpy as np

from ...ir import Graph, Node, TensorType, Value
from ..base import Executable, Target
from ..concurrency import OPTION_HELP, max_concurrency
from ..plan_options import (
    CACHE_HELP,
    DEFAULT_PLAN_CACHE_SIZE,
    SHAPES_HELP,
    ahead_shapes,
    plan_cache_size,
)
from ..native.lower import LoweringError, static_dims
from .core_executor import new_arena_pool
from .packing_cache import PackingCache
from .saved_plan import SavedSpecialization, saved_segments, segment_data
from .segments import ExecutorSegment, Segment, split_segments
from ..native.lower_loops import holds_loops, refusal_detail
from ..native.specialize import plan_graph, shape_deciding_inputs
from .table import SUPPORT
from .threads import LOAD, num_threads


class CpuTarget(Target):
    name = "cpu"
    options = {
        "fallback": "'ref' runs ops the cpu target lacks on the ref target "
        "(default: such ops are a compile error)",
        # graphkiln.tuning
        "exhaustive_tune": "True measures the candidate configurations of every "
        "tunable kernel and stores the winners in the tuning "
        "database (GRAPHKILN_TUNING_DB)",
        "tuning": "False ignores the tuning database (heuristic kernel choices only; "
        "default: the database's choices where it has them)",
        "max_concurrency": OPTION_HELP + " (cpu default: the physical cores)",
        "plan_cache_size": CACHE_HELP,
        "shapes": SHAPES_HELP,
        "int8": "True runs a QDQ model's quantized convolutions, matmuls and poolings on "
        "int8 kernels (results may differ from the ref target by one unit where a value "
        "lies on a rounding boundary); False computes them in float32 between its "
        "DequantizeLinear and QuantizeLinear nodes, exactly as ref does (default: True "
        "where the CPU has VNNI or AMX, whose int8 sums are exact, else False)",
    }

    def passes(self, options: dict) -> list:
        from ...passes import expand_quantize, fold_quantized
        from ...passes.pipelines import pipeline

        from .int8_isa import onednn_int8_exact

        int8 = options.get("int8")
        start = [fold_quantized] if (onednn_int8_exact() if int8 is None else int8) else []
        return pipeline("full", {"start": start, "before_fusion": [expand_quantize]})

    def node_support(self, node: Node) -> bool | None:
        """Whether the cpu runs `node` (None: the input shapes of each plan decide)."""
        from ..native.lower_support import support_decision

        return support_decision(node, SUPPORT)

    def compile(self, graph: Graph, options: dict) -> CpuExecutable:
        fallback = options.get("fallback")
        if fallback not in (None, "ref"):
            raise ValueError(f"fallback={fallback!r}: accepted values are None and 'ref'")
        if fallback is None:
            missing = unsupported_nodes(graph, static=False)
            if missing:
                raise LoweringError.missing("cpu", missing, fallback="ref")
        shapes = ahead_shapes(options, list(graph.inputs))
        executable = CpuExecutable(
            graph,
            fallback == "ref",
            _tune_mode(options),
            max_contexts=_max_contexts(options),
            plan_cache_size=plan_cache_size(options),
        )
        for signature in shapes:  # compile(..., shapes=[...]): built ahead
            executable.build_ahead(signature)
        return executable

    def unsupported_nodes(self, graph: Graph) -> list[Node]:
        """The nodes without a kernel (lower_support.node_supported: the lowering table, its
        `supports` predicates, static dims and kernel dtypes), as compile decides: an op
        without a lowering always; one refused for its attributes, dtypes or shapes only in a
        graph with static input dims and unless it reads small integer inputs
        (shape_deciding_inputs), as plans made per input shape and value decide those (and
        in a graph holding a Loop / Scan: its plans unroll them, native/lower_loops.py)."""
        static = _static(graph.inputs) and not holds_loops(graph)
        no_lowering = set(unsupported_nodes(graph, static=False))
        return [
            n
            for n in unsupported_nodes(graph, static=static)
            if n in no_lowering or not shape_deciding_inputs(graph, [n])
        ]

    def from_saved(self, graph: Graph, options: dict, items: list) -> CpuExecutable:
        """The executable of a loaded program from its saved plan (saved_plan.py): no
        lowering, the kernels take the saved packed constants back. The caller has checked
        that the saved plan_key() equals this machine's."""
        return CpuExecutable(
            graph,
            options.get("fallback") == "ref",
            _tune_mode(options),
            saved=items,
            max_contexts=_max_contexts(options),
            plan_cache_size=plan_cache_size(options),
        )


def _max_contexts(options: dict) -> int:
    from .threads import physical_cores

    return max_concurrency(options, default=physical_cores())


def _tune_mode(options: dict) -> str:
    return (
        "exhaustive"
        if options.get("exhaustive_tune")
        else "lookup"
        if options.get("tuning", True)
        else "off"
    )


def unsupported_nodes(graph: Graph, static: bool = True) -> list[Node]:
    """Nodes the cpu target cannot run; with static=False, only those of ops it has no
    lowering for at all, leaving out the shape computations every plan folds."""
    from ..native.lower_support import folded_when_specialized, node_supported

    folded = set() if static else folded_when_specialized(graph)
    return [
        n
        for n in graph.nodes
        if n.op != "Constant" and n not in folded and not node_supported(n, SUPPORT, static)
    ]


def _runs(node: Node) -> bool:
    """Whether the cpu runs a node of static shapes (specialize decomposes the others)."""
    from ..native.lower_support import node_supported

    return node_supported(node, SUPPORT)


MAX_PLANS = DEFAULT_PLAN_CACHE_SIZE  # default plans kept per program (plan_cache_size)


class CpuExecutable(Executable):
    """Plans keyed by the input shapes and, for the small integer inputs that decide shapes
    (found on the first plan), their values.

    Threads: run() may be called from several threads at once. The plan cache is guarded by
    a lock; a missing plan is built once (by the first thread asking, the others wait for
    it), outside the lock, so runs of other shapes go on meanwhile. A run holds its plan's
    segments, so evicting them from the cache never disturbs it. Each plan's executor takes
    an execution context per run (at most max_contexts at once).

    Plans of other shapes share their packed weights (packing_cache.py: a kernel that packs
    a constant to a layout an earlier plan packed it to takes those bytes as they are). A
    run of a known shape costs one dictionary lookup under the lock before the executor.

    Load: while other processes keep the cores busy (threads.LoadMonitor), a program of
    several threads runs on a one-thread twin of itself (`_narrow`, built at the first such
    run; it shares the packed weights and the arena pool), whose kernels wait on no
    preempted worker."""

    def __init__(
        self,
        graph: Graph,
        fallback: bool,
        tune: str = "lookup",
        saved: list | None = None,
        max_contexts: int = 1,
        plan_cache_size: int = DEFAULT_PLAN_CACHE_SIZE,
        threads: int | None = None,
        packing: PackingCache | None = None,
        arena_pool=None,
    ):
        self.graph = graph
        self.max_contexts = max_contexts
        self.plan_cache_size = plan_cache_size
        self._lock = threading.Lock()
        self._building: dict[tuple, threading.Event] = {}
        self._value_inputs_known = False
        self.fallback = fallback
        self.tune = tune  # graphkiln.tuning mode: "lookup", "exhaustive" or "off"
        self.threads = num_threads() if threads is None else threads
        self.profiling = False
        self.value_inputs: list[int] = []
        self.packing = PackingCache() if packing is None else packing
        # every plan's runs take their arenas here
        self.arena_pool = new_arena_pool() if arena_pool is None else arena_pool
        self._narrow: CpuExecutable | None = None  # the one-thread twin (class docstring)
        self._narrow_lock = threading.Lock()
        self._plans: OrderedDict[tuple, list[Segment]] = OrderedDict()
        self._runners: dict[tuple, object] = {}  # the same keys: the hit path's callable
        self._saved_unshared: list = []  # saved segments not yet given to self.packing
        self.plan_source = "lowered"  # "saved": the first plans came from a saved program
        if saved is not None:
            if not (saved and all(isinstance(x, SavedSpecialization) for x in saved)):
                if not _static(graph.inputs):
                    raise LoweringError(
                        "a saved plan needs a graph whose inputs have static "
                        "shapes, or saved specializations"
                    )
                saved = [SavedSpecialization(tuple(static_dims(v) for v in graph.inputs), saved)]
            for entry in saved:
                segments = saved_segments(
                    entry.items,
                    self.threads,
                    list(graph.inputs),
                    list(graph.outputs),
                    max_contexts,
                    self.arena_pool,
                )
                self._insert((tuple(tuple(d) for d in entry.shapes), ()), segments)
                self._saved_unshared.extend(s for s in segments if hasattr(s, "saved"))
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
        specialized = plan_graph(graph, shapes, None, _runs)
        missing = unsupported_nodes(specialized)
        if not missing:
            return False
        self.value_inputs = shape_deciding_inputs(specialized, missing)
        if not self.value_inputs:
            detail = refusal_detail(missing[0], "no kernel for these attributes or dynamic shapes")
            raise LoweringError.missing("cpu", missing, detail, fallback="ref")
        return True

    def _decide_value_inputs(self, shapes: tuple) -> None:
        with self._lock:  # the first run decides, once, which inputs key the plans
            if not self._value_inputs_known:
                if not self._plans and not self.value_inputs:
                    self._needs_values(self.graph, shapes)
                self._value_inputs_known = True

    def build_ahead(self, shapes: tuple) -> None:
        """Build the plan of one input shape signature now (compile's `shapes` option)."""
        if not self._value_inputs_known:
            self._decide_value_inputs(shapes)
        if self.value_inputs:
            names = [self.graph.inputs[i].name for i in self.value_inputs]
            raise LoweringError(
                f"shapes: this program's plans depend on the values of input(s) "
                f"{names} (shapes computed from them), so they are built "
                "when it runs; compile it without `shapes`"
            )
        self._segments(tuple(tuple(d) for d in shapes), None)

    def _insert(self, key: tuple, segments: list[Segment]) -> None:
        """Cache a plan (the lock held or no other thread yet), least recently used out."""
        self._plans[key] = segments
        self._runners[key] = _runner(segments)
        while len(self._plans) > self.plan_cache_size:
            old, _ = self._plans.popitem(last=False)
            del self._runners[old]

    def _segments(self, shapes: tuple, arrays, behind: bool = False) -> list[Segment]:
        """The plan of `shapes` (and the values of shape-deciding inputs in `arrays`),
        built if missing; behind: a run asks, which may start before every kernel is
        built (core_executor.build_executor's build_behind)."""
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
            segments = self._build(shapes, values, behind)
            with self._lock:
                self._insert(key, segments)
        finally:
            with self._lock:
                del self._building[key]
            building.set()
        return segments

    def _build(self, shapes: tuple, values: dict, behind: bool = False) -> list[Segment]:
        if self._saved_unshared:  # a loaded program's packed weights, for new shapes too
            with self._lock:
                pending, self._saved_unshared = self._saved_unshared, []
            for s in pending:
                self.packing.remember_steps(s.saved.steps, s.saved.constants, s.executor)
        graph = plan_graph(self.graph, shapes, values, _runs)
        segments = split_segments(
            graph,
            self.fallback,
            self.threads,
            self.tune,
            self.max_contexts,
            self.packing,
            self.arena_pool,
            behind,
        )
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

    def saved_specializations(self) -> list[SavedSpecialization] | None:
        """The plans built for a graph with dynamic input shapes, as data to save: those
        that are one executor segment from the graph's inputs to its outputs (their values
        mapped back to this graph's), most recently used last. None where plans depend on
        input values, or for a static graph (saved_plan)."""
        if _static(self.graph.inputs) or self.value_inputs:
            return None
        with self._lock:
            plans = [(key[0], segments) for key, segments in self._plans.items() if not key[1]]
        out = []
        for shapes, segments in plans:
            if len(segments) != 1 or not _direct(segments[0]):
                continue
            data = segment_data(segments[0])
            data = replace(data, inputs=list(self.graph.inputs), outputs=list(self.graph.outputs))
            out.append(SavedSpecialization(shapes, [data]))
        return out

    def _narrow_twin(self) -> CpuExecutable:
        """The one-thread twin this program runs on while the machine is crowded."""
        with self._narrow_lock:
            if self._narrow is None:
                twin = CpuExecutable(
                    self.graph,
                    self.fallback,
                    self.tune,
                    None,
                    self.max_contexts,
                    self.plan_cache_size,
                    threads=1,
                    packing=self.packing,
                    arena_pool=self.arena_pool,
                )
                twin.set_profiling(self.profiling)
                self._narrow = twin
            return self._narrow

    def run(self, inputs) -> list:
        if self.threads > 1 and LOAD.crowded(self.threads):
            return self._narrow_twin().run(inputs)
        arrays = [np.asarray(a, order="C") for a in inputs]
        key = (tuple(a.shape for a in arrays), ())
        if not self.value_inputs:  # the hit path: a lookup, then the executor
            with self._lock:
                runner = self._runners.get(key)
                if runner is not None:
                    self._plans.move_to_end(key)
            if runner is not None:
                return runner(arrays)
        shapes = key[0]
        if not self._value_inputs_known:
            self._decide_value_inputs(shapes)
        return _runner(self._segments(shapes, arrays, behind=True))(arrays)

    def set_profiling(self, on: bool) -> None:
        """Time every kernel call of the following runs (see step_times)."""
        with self._lock:
            self.profiling = on
            plans = list(self._plans.values())
        if self._narrow is not None:
            self._narrow.set_profiling(on)
        for segments in plans:
            for s in segments:
                s.set_profiling(on)

    def step_times(self) -> list[tuple[str, str, float, int]]:
        """(kernel, node name, total ms, runs) per kernel call of every plan, while profiling."""
        with self._lock:
            plans = list(self._plans.values())
        return [t for segments in plans for s in segments for t in s.step_times()]

    def print_plan(self, file=None) -> None:
        """Print the plans built so far (plan_print.py), one per input shape signature (and
        values of shape-deciding inputs), least recently used first; each segment's steps
        (a ref segment: its nodes)."""
        import sys

        from ..native.plan_print import format_plans, format_plan, format_saved

        def text(segment) -> str:
            if hasattr(segment, "saved"):
                return format_saved(segment.saved)
            if hasattr(segment, "plan"):
                return format_plan(segment.plan)
            ops = ", ".join(dict.fromkeys(n.op for n in segment.nodes))
            return f"ref: {len(segment.nodes)} nodes evaluated by the ref target ({ops})"

        with self._lock:
            plans = list(self._plans.items())
        entries = [(key[0], bool(key[1]), [text(s) for s in segments]) for key, segments in plans]
        print(format_plans([v.name for v in self.graph.inputs], entries), file=file or sys.stdout)

    def plan_summary(self) -> dict:
        """The plans built so far (for stats): `plans`, and of the most recently used one
        `steps`, `arena_bytes` (its executors' arena: Plan.place_arena's, summed over its
        segments), `naive_bytes` (its arena buffers unshared; None for saved plans),
        `ref_nodes`; `contexts` / `context_bytes` over all plans."""
        with self._lock:
            plans = list(self._plans.values())
        out = {
            "plans": len(plans),
            "plan_source": self.plan_source,
            "max_concurrency": self.max_contexts,
        }
        contexts = context_bytes = 0
        for segments in plans:
            out["steps"] = sum(s.num_steps for s in segments)
            out["arena_bytes"] = sum(s.arena_bytes for s in segments)
            naive = [s.naive_bytes for s in segments]
            out["naive_bytes"] = None if None in naive else sum(naive)
            out["ref_nodes"] = sum(s.ref_nodes for s in segments)
            for s in segments:
                created = getattr(getattr(s, "executor", None), "contexts_created", 0)
                contexts += created
                context_bytes += created * s.arena_bytes
        # execution contexts of every plan and segment, and the arena bytes they hold
        out["contexts"] = contexts
        out["context_bytes"] = context_bytes
        return out


def _direct(segment: Segment) -> bool:
    """Whether `segment` is an executor taking the graph's inputs and making its outputs."""
    return (
        isinstance(segment, ExecutorSegment)
        and segment.inputs == segment.graph_inputs
        and segment.outputs == segment.graph_outputs
    )


def _runner(segments: list[Segment]):
    """The function running one plan on the run's input arrays: the executor itself for a
    plan of one executor segment, else the segments in order through an environment."""
    if len(segments) == 1 and _direct(segments[0]) and not segments[0].bounded:
        run, dtypes = segments[0].executor.run, segments[0].input_dtypes

        def direct(arrays):
            return run(
                [a if a.dtype == dt else np.asarray(a, dtype=dt) for a, dt in zip(arrays, dtypes)]
            )

        return direct

    def through_env(arrays):
        graph_inputs = segments[0].graph_inputs if segments else []
        env: dict[Value, object] = dict(zip(graph_inputs, arrays))
        for segment in segments:
            segment.run(env)
        outputs = segments[-1].graph_outputs if segments else []
        return [env[v] if v in env else np.asarray(v.constant) for v in outputs]

    return through_env


def _static(values: list[Value]) -> bool:
    return all(
        isinstance(v.type, TensorType)
        and v.type.dims is not None
        and all(isinstance(d, int) for d in v.type.dims)
        for v in values
    )
