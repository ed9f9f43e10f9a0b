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
from ...ir.graph import captured_values
from .lower import LoweringContext
from .lower_loops import lowerable_body, unrollable
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


# -- Loop ------------------------------------------------------------------------------------
#
#     Copy v_initial -> the Loop's outputs (the carried state, read and written in place)
#     Fill 0 -> i;  Copy cond -> c (Fill true without cond)
# T:  LoopTest(i, c, M, target=X)      c false or i == M: go on at X
#     <body's steps>                   body inputs bound to i, c and the state's slots
#     Copy body results -> c and the state (through temporaries where a result is a view
#                                           of the state)
#     LoopNext(i, outer values..., target=T)   i += 1
# X:  ...
#
# The arena placement stays linear: the state, i, c and every value of the enclosing graph
# the body reads are read by LoopNext, the loop's last step, so they live through every
# iteration; the body's own values live within one iteration. Loops with scan outputs, or
# whose state changes type between iterations, are not compiled (unrolled when their trip
# count is a constant: passes/unroll_loops.py, or left to fallback="ref").


def _loop_parts(node: Node):
    body: Graph = node.attrs["body"]
    m = node.inputs[0] if node.inputs else None
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    return body, m, cond, list(node.inputs[2:])


def loop_compilable(node: Node, ctx) -> bool:
    body, m, cond, initial = _loop_parts(node)
    carried = len(initial)
    if any(v is None for v in initial) or len(body.outputs) != carried + 1:
        return False  # an omitted initial value, or scan outputs (their length is run-time)
    if len(body.inputs) != carried + 2:
        return False
    for value, dtype in ((m, DType.i64), (cond, DType.bool)):
        if value is not None and not _scalar_of(value, dtype):
            return False
    if not _scalar_of(body.outputs[0], DType.bool):
        return False
    for init, inner_in, inner_out, outer in zip(
        initial, body.inputs[2:], body.outputs[1:], node.outputs
    ):
        if not (_same_static_type(inner_in, init) and _same_static_type(inner_out, init)):
            return False
        if outer is not None and not _same_static_type(outer, init):
            return False
    return all(node_supported(n, ctx) for n in body.nodes if n.op != "Constant")


def _scalar_of(value, dtype: DType) -> bool:
    t = value.type
    return (
        isinstance(t, TensorType)
        and t.dtype == dtype
        and t.dims is not None
        and all(isinstance(d, int) for d in t.dims)
        and int(np.prod(t.dims, dtype=np.int64)) == 1
    )


@supports(loop_compilable)
def lower_loop(node: Node, ctx: LoweringContext) -> None:
    body, m, cond, initial = _loop_parts(node)
    name = node.name or "loop"
    state = []
    for init, outer in zip(initial, node.outputs):
        slot = (
            ctx.output(outer)
            if outer is not None
            else ctx.temp(init.type.dtype, tuple(init.type.dims))
        )
        ctx.emit("Copy", [ctx.input(init)], [slot], {}, f"{name}/initial")
        state.append(slot)
    iteration = ctx.temp(DType.i64, ())
    ctx.emit("Fill", [], [iteration], {"bits": 0}, f"{name}/iteration")
    go_on = ctx.temp(DType.bool, ())
    if cond is None:
        ctx.emit("Fill", [], [go_on], {"bits": 1}, f"{name}/condition")
    else:
        ctx.emit("Copy", [ctx.input(cond)], [go_on], {}, f"{name}/condition")
    trips = None if m is None else ctx.input(m)
    steps = ctx.plan.steps
    test = len(steps)
    ctx.emit("LoopTest", [iteration, go_on, trips], [], {"target": -1}, f"{name}/test")
    ctx.bind(body.inputs[0], iteration)
    ctx.bind(body.inputs[1], go_on)
    for inner, slot in zip(body.inputs[2:], state):
        ctx.bind(inner, slot)
    with ctx.branch_scope(body.nodes):
        for inner in body.nodes:
            if inner.op != "Constant":
                ctx.lowerings[inner.op](inner, ctx)
        _write_back(ctx, body.outputs, [go_on, *state], name)
        outer_reads = [ctx.slot_of(v) for v in captured_values(body)]
    keep = [*outer_reads, *state, go_on] + ([] if trips is None else [trips])
    ctx.emit("LoopNext", [iteration, *keep], [iteration], {"target": test}, f"{name}/next")
    steps[test].attrs["target"] = len(steps)


def _write_back(ctx: LoweringContext, results, targets: list[int], name: str) -> None:
    """Copy the body's results into the loop's state. A result that is a view of the state
    other than its own place (a carried value passed on to another position) would be
    overwritten before it is read: then every result goes through a temporary first."""
    sources = [ctx.input(v) for v in results]
    storages = {ctx.slot(t).storage for t in targets}

    def same_place(s: int, t: int) -> bool:
        a, b = ctx.slot(s), ctx.slot(t)
        return a.storage == b.storage and a.byte_offset == b.byte_offset

    if any(
        ctx.slot(s).storage in storages and not same_place(s, t) for s, t in zip(sources, targets)
    ):
        temps = []
        for s in sources:
            src = ctx.slot(s)
            temp = ctx.temp(src.dtype, src.dims)
            ctx.emit("Copy", [s], [temp], {}, f"{name}/result")
            temps.append(temp)
        sources = temps
    for s, t in zip(sources, targets):
        if not same_place(s, t):  # else passed through unchanged
            ctx.emit("Copy", [s], [t], {}, f"{name}/carry")


def _loop_possible(node: Node, ctx) -> bool:
    """Before the plans (symbolic shapes): whether some plan could run `node`, compiled
    here (no scan outputs, every initial value given, lowerings for the body's ops) or
    unrolled (lower_loops.py)."""
    body, _, _, initial = _loop_parts(node)
    compiled = (
        not any(v is None for v in initial)
        and len(body.outputs) == len(initial) + 1
        and lowerable_body(body, ctx)
    )
    return compiled or unrollable(node, ctx)


lower_loop.possible = _loop_possible  # type: ignore[attr-defined]

LOWERINGS = {"If": lower_if}
# the cpu table's Loop (in place of lower_loops.py's, which only ever refuses a Loop that did
# not unroll): a Loop a plan did not unroll is compiled here when it can be
LOOP_LOWERING = lower_loop
