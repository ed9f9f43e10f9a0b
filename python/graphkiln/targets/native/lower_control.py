# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""If compiled in line into its plan: the condition is read by a Branch step in the C++
executor (src/cpu/control.cpp), never by Python.

    Branch(cond, target=E)     the condition false: go on at step E
    <then-branch's steps>      reading outer values from their slots (no copies)
    Copy then-results -> the If's outputs
    Jump(target=X)
E:  <else-branch's steps>
    Copy else-results -> the If's outputs
X:  ...

Only one branch runs, so the arena placement (Plan.place_arena: a buffer lives from the
first step touching it to the last) stays correct across the jumps: a branch's own buffers
are dead outside its steps, and the If's outputs, written at the end of either branch, live
from the first write to their last reader after X. A constant condition lowers the branch it
picks and no Branch step.

Supported when both branches' nodes are (the target's own predicates, after the plan's
shapes are known) and each branch result has the If output's static type; else the If is
left to `fallback="ref"` with the rest the target refuses."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Graph, Node, TensorType
from .lower import LoweringContext
from .lower_support import node_supported, supports


def _branches(node: Node) -> tuple[Graph, Graph]:
    return node.attrs["then_branch"], node.attrs["else_branch"]


def _same_static_type(inner, outer) -> bool:
    a, b = inner.type, outer.type
    return (
        isinstance(a, TensorType)
        and isinstance(b, TensorType)
        and a.dtype == b.dtype
        and a.dims is not None
        and all(isinstance(d, int) for d in a.dims)
        and tuple(a.dims) == tuple(b.dims or ())
    )


def if_supported(node: Node, ctx) -> bool:
    cond = node.inputs[0]
    if not (isinstance(cond.type, TensorType) and cond.type.dtype == DType.bool):
        return False
    for branch in _branches(node):
        if len(branch.outputs) != len(node.outputs):
            return False
        for inner, outer in zip(branch.outputs, node.outputs):
            if outer is not None and not _same_static_type(inner, outer):
                return False
        if not all(node_supported(n, ctx) for n in branch.nodes if n.op != "Constant"):
            return False
    return True


def _lower_branch(branch: Graph, outputs: list, ctx: LoweringContext, name: str) -> None:
    """The branch's nodes, then its results copied into the If's output slots. Layout
    copies made inside the branch are forgotten after it: they exist only when it runs."""
    with ctx.branch_scope(branch.nodes):
        for inner in branch.nodes:
            if inner.op == "Constant":
                continue
            ctx.lowerings[inner.op](inner, ctx)
        for value, slot in zip(branch.outputs, outputs):
            if slot is not None:
                ctx.emit("Copy", [ctx.input(value)], [slot], {}, f"{name}/{value.name}")


@supports(if_supported)
def lower_if(node: Node, ctx: LoweringContext) -> None:
    outputs = [None if v is None else ctx.output(v) for v in node.outputs]
    then_branch, else_branch = _branches(node)
    cond = node.inputs[0]
    if cond.constant is not None:  # decided at compile time: one branch, no Branch step
        taken = then_branch if bool(np.asarray(cond.constant).reshape(-1)[0]) else else_branch
        _lower_branch(taken, outputs, ctx, node.name)
        return
    steps = ctx.plan.steps
    branch = len(steps)
    ctx.emit("Branch", [ctx.input(cond)], [], {"target": -1}, f"{node.name}/branch")
    _lower_branch(then_branch, outputs, ctx, f"{node.name}/then")
    jump = len(steps)
    ctx.emit("Jump", [], [], {"target": -1}, f"{node.name}/end_then")
    steps[branch].attrs["target"] = len(steps)
    _lower_branch(else_branch, outputs, ctx, f"{node.name}/else")
    steps[jump].attrs["target"] = len(steps)


LOWERINGS = {"If": lower_if}
