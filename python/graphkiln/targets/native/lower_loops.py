# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Loop and Scan on the native targets: unrolled when a plan is made, never lowered as
nodes. The plan of each input shape (specialize.py, `unroll_small_loops`) replaces every Loop
/ Scan that passes/unroll_loops.py unrolls (a constant trip count no condition cuts short, or
a static scan length; small) by its iterations, whose nodes the target's table decides and
lowers one by one, as any others (so an If in a Loop body lowers through lower_control.py
where the target has that, and `fallback="ref"` takes only the nodes it must).

These entries make the checks made before the plans count such a node as supported: while
shapes are symbolic, or in a graph that holds a Loop / Scan (`holds_loops`: its plans are
specialized whatever its input shapes), `possible` says whether some plan could unroll it
(unroll_loops.structural_refusal: a Loop without trip count, or whose body computes its
condition, never unrolls) and the target has lowerings for its body's ops. At the static
shapes of a plan, what is left of them is what did not unroll: `supports` refuses it, and
lowering one anyway is a LoweringError saying why."""

from __future__ import annotations

from ...ir import Graph, Node
from ...ir.graph import node_subgraphs
from ...passes.unroll_loops import (
    MAX_UNROLLED_NODES,
    UNROLLED_OPS,
    structural_refusal,
    unroll_refusal,
)
from .lower import LoweringContext, LoweringError, node_label
from .lower_support import node_supported, supports


def holds_loops(graph: Graph) -> bool:
    """Whether `graph` has a Loop or Scan node (its plans unroll them: specialize.py)."""
    return any(n.op in UNROLLED_OPS for n in graph.nodes)


def unrollable(node: Node, ctx) -> bool:
    """Whether some plan could unroll `node` and run what it unrolls to: its structure
    allows it, and the target has a lowering for every op of its body (an If's only for
    its branches' ops: one whose condition the iteration number decides is spliced; a node
    with a decomposition is decomposed where the plan refuses it)."""
    return structural_refusal(node) is None and lowerable_body(node.attrs["body"], ctx)


def lowerable_body(graph: Graph, ctx) -> bool:
    for n in graph.nodes:
        if n.op == "Constant":
            continue
        lowered = n.op == "If" or n.decomposition is not None  # spliced / decomposed then
        if not lowered and not node_supported(n, ctx, static=False):
            return False
        if not all(lowerable_body(g, ctx) for g in node_subgraphs(n)):
            return False
    return True


def _left_after_unrolling(node: Node, ctx) -> bool:
    return False  # a plan holds a Loop / Scan only where it did not unroll


def refusal_detail(node: Node, detail: str) -> str:
    """What to say of a node a plan refuses: `detail`, or for a Loop / Scan left in it why
    it did not unroll."""
    if node.op not in UNROLLED_OPS:
        return detail
    reason = unroll_refusal(node) or (
        f"the plan's unrolling budget ({MAX_UNROLLED_NODES} nodes) went to earlier loops"
    )
    return f"not unrolled: {reason}"


@supports(_left_after_unrolling)
def lower_unrolled(node: Node, ctx: LoweringContext) -> None:
    detail = refusal_detail(node, "")
    raise LoweringError(f"{node.op} {node_label(node)!r} is {detail}")


lower_unrolled.possible = unrollable  # type: ignore[attr-defined]

LOWERINGS = {"Loop": lower_unrolled, "Scan": lower_unrolled}
