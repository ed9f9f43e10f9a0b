# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Assign every intermediate tensor an offset in one arena.

Liveness is [index of the producing node, index of the last reader]. Views (Reshape,
Flatten, Squeeze, Unsqueeze, Identity) share their input's buffer; a pointwise node whose
input dies there and has the output's size writes in place. Buffers are then placed
largest first at the lowest offset that overlaps no buffer live at the same time.
Graph inputs, constants and graph outputs live outside the arena."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, TensorType, Value
from ..ir.graph import node_reads
from ..passes.op_classes import POINTWISE, VIEWS

ALIGN = 64


@dataclass
class MemoryPlan:
    offsets: dict[Value, int] = field(default_factory=dict)
    arena_bytes: int = 0
    naive_bytes: int = 0
    in_place: int = 0
    views: int = 0

    def as_dict(self) -> dict:
        return {"arena_bytes": self.arena_bytes, "naive_bytes": self.naive_bytes,
                "in_place": self.in_place, "views": self.views}


def _bytes(v: Value) -> int | None:
    t = v.type
    return t.nbytes() if isinstance(t, TensorType) else None


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def plan_memory(graph: Graph) -> MemoryPlan:
    plan = MemoryPlan()
    outside = set(graph.inputs) | set(graph.outputs)
    last_use: dict[Value, int] = {}
    for index, node in enumerate(graph.nodes):
        for v in node_reads(node):
            last_use[v] = index
    root: dict[Value, Value] = {}          # value -> value whose buffer it shares
    members: dict[Value, list[Value]] = {}  # buffer owner -> values sharing it
    start: dict[Value, int] = {}

    def find(v: Value) -> Value:
        while v in root:
            v = root[v]
        return v

    def group_end(owner: Value) -> int:
        return max(last_use.get(m, start[owner]) for m in members[owner])

    for index, node in enumerate(graph.nodes):
        if node.op == "Constant":
            continue
        for out in node.outputs:
            if out is None or out in outside or _bytes(out) is None:
                continue
            plan.naive_bytes += _bytes(out)
            owner = _reusable_input(node, out, find, group_end, index, start, _bytes)
            if owner is not None:
                root[out] = owner
                members[owner].append(out)
                plan.views += node.op in VIEWS
                plan.in_place += node.op not in VIEWS
                continue
            start[out] = index
            members[out] = [out]
    buffers = sorted(start, key=lambda v: (-_bytes(v), start[v]))
    offsets, plan.arena_bytes = place_buffers(
        [(v, _bytes(v), start[v], group_end(v)) for v in buffers])
    for v in buffers:
        for m in members[v]:
            plan.offsets[m] = offsets[v]
    return plan


def place_buffers(buffers) -> tuple[dict, int]:
    """Greedy placement of (key, bytes, first step, last step) in the given order (largest
    first works best): each at the lowest aligned offset overlapping no buffer live at the
    same time. Returns ({key: offset}, arena bytes)."""
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, first, last)
    offsets: dict = {}
    total = 0
    for key, nbytes, first, last in buffers:
        size = _aligned(max(nbytes, 1))
        offset = 0
        for o, s, b, e in sorted(p for p in placed if not (p[3] < first or last < p[2])):
            if offset + size <= o:
                break
            offset = max(offset, o + s)
        placed.append((offset, size, first, last))
        offsets[key] = offset
        total = max(total, offset + size)
    return offsets, total


def _reusable_input(node, out, find, group_end, index, start, nbytes):
    """The buffer owner `out` can share: its view source, or a same-size input dying here."""
    if node.op in VIEWS and node.inputs and node.inputs[0] is not None:
        owner = find(node.inputs[0])
        return owner if owner in start else None
    pointwise = node.op in POINTWISE or (node.op == "Fused" and node.attrs.get("kind") == "pointwise")
    if not pointwise:
        return None
    for v in node.inputs:
        if v is None:
            continue
        owner = find(v)
        if (owner in start and group_end(owner) == index and nbytes(owner) == nbytes(out)
                and sum(1 for w in node.inputs if w is not None and find(w) is owner) == 1):
            return owner
    return None
