# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A compiled cpu program's plans as plain data, to save with it and build again without
lowering: per plan segment the executor's steps, constants, arena size and the constants
its kernels packed (oneDNN weights in the primitive's layout), which the kernels take back
as they are instead of reordering the weights again.

Such data is only valid where the kernels would pack the same way: `plan_key()` names the
CPU ISA oneDNN dispatches to, the oneDNN version and the graphkiln version. A loader uses a
saved plan only where the key is equal; elsewhere it lowers the compiled graph again."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ir import DType, Node, Value
from ...version import __version__
from ..native.kernel_contracts import check_step
from ..native.lower import LoweringError
from ..native.plan import Plan
from ..native.bounded import bounded_outputs
from .segments import ExecutorSegment, RefSegment, Segment


def plan_key() -> dict:
    """What a saved plan depends on beyond the graph: the ISA oneDNN dispatches to (its
    effective ISA, so ONEDNN_MAX_CPU_ISA counts), the oneDNN version, graphkiln's version."""
    from ..._native import load_core

    core = load_core()
    return {"isa": core.cpu_isa(), "onednn": core.onednn_version(), "graphkiln": __version__}


@dataclass
class SavedPlan:
    """One plan segment as the executor takes it. Step dicts are plan.executor_steps()'s,
    with "packed": [(layout, uint8 array)] where the step's kernel packed constants."""

    inputs: list[Value]
    outputs: list[Value]
    steps: list[dict]
    constants: list[np.ndarray]
    arena_bytes: int
    input_specs: list[tuple[DType, list[int]]]
    output_specs: list[tuple[DType, list[int]]]
    packed: dict[int, list] = field(default_factory=dict)


@dataclass
class SavedSpecialization:
    """The plan of one input shape signature of a graph with dynamic input shapes: the
    shapes (one tuple per graph input) and its segments' data (SavedPlan or nodes)."""

    shapes: tuple
    items: list


def saved_plan(segment) -> SavedPlan:
    """The data of a built PlanSegment (or of a SavedPlanSegment, which keeps its own)."""
    if isinstance(segment, SavedPlanSegment):
        return segment.saved
    plan: Plan = segment.plan

    def spec(slots):
        return [(plan.slots[s].dtype, list(plan.slots[s].dims)) for s in slots]

    packed = {
        index: [(layout, array) for layout, array in items]
        for index, items in segment.executor.packed_constants()
    }
    return SavedPlan(
        list(segment.inputs),
        list(segment.outputs),
        plan.executor_steps(),
        list(plan.constants),
        int(plan.arena_bytes),
        spec(plan.input_slots),
        spec(plan.output_slots),
        packed,
    )


class SavedPlanSegment(ExecutorSegment):
    """A plan segment built from saved data: no lowering, packed constants given back."""

    def __init__(self, saved: SavedPlan, threads: int, max_contexts: int = 1, arena_pool=None):
        from .core_executor import build_executor

        check_saved_steps(saved)
        self.saved = saved
        self.inputs, self.outputs = saved.inputs, saved.outputs
        self.bounded = bounded_outputs(saved.steps)
        self.input_dtypes = [v.type.dtype.numpy for v in saved.inputs]
        steps = [
            dict(step, packed=saved.packed[i]) if i in saved.packed else step
            for i, step in enumerate(saved.steps)
        ]

        def specs(items):
            return [(dtype.numpy, list(dims)) for dtype, dims in items]

        self.executor = build_executor(
            steps,
            saved.constants,
            saved.arena_bytes,
            specs(saved.input_specs),
            specs(saved.output_specs),
            threads,
            max_contexts,
            arena_pool,
        )
        self.num_steps = len(saved.steps)
        self.arena_bytes = saved.arena_bytes
        self.naive_bytes = None  # saved data keeps the placement, not the buffers

    @property
    def reused_packings(self) -> int:
        """How many saved packed constants the kernels took as they are."""
        return self.executor.reused_packings


# Reduce op names saved before the cpu took the gpu's spelling (kernel_contracts.REDUCE_OPS)
OLD_REDUCE_OPS = {"logsum": "log_sum", "logsumexp": "log_sum_exp", "sumsquare": "sum_square"}


def check_saved_steps(saved: SavedPlan) -> None:
    """Check loaded steps against their kernels' contracts (kernel_contracts.py), after
    renaming what older files spell otherwise (Reduce ops); LoweringError names the step."""
    for index, step in enumerate(saved.steps):
        attrs = step["attrs"]
        if step["kernel"] == "Reduce" and attrs.get("op") in OLD_REDUCE_OPS:
            step["attrs"] = attrs = {**attrs, "op": OLD_REDUCE_OPS[attrs["op"]]}
        error = check_step("cpu", step["kernel"], attrs, len(step["inputs"]), len(step["outputs"]))
        if error:
            raise LoweringError(f"saved plan step {index} ({step.get('name', '')!r}): {error}")


def saved_segments(
    items: list,
    threads: int,
    graph_inputs: list[Value],
    graph_outputs: list[Value],
    max_contexts: int = 1,
    arena_pool=None,
) -> list[Segment]:
    """Segments from saved data: a SavedPlan, or a list of nodes the ref target runs."""
    segments: list[Segment] = []
    for item in items:
        if isinstance(item, SavedPlan):
            segments.append(SavedPlanSegment(item, threads, max_contexts, arena_pool))
        else:
            segments.append(RefSegment(list(item)))
    for s in segments:
        s.graph_inputs, s.graph_outputs = list(graph_inputs), list(graph_outputs)
    return segments


def segment_data(segment) -> SavedPlan | list[Node]:
    """What saving keeps of one segment."""
    if isinstance(segment, RefSegment):
        return list(segment.nodes)
    return saved_plan(segment)
