# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Einsum on the native targets: at lowering (static shapes, so after a graph with symbolic
dims is specialized) the equation becomes IR nodes that the target's own table lowers
(Transpose, Reshape, Gather, ReduceSum, Mul, MatMul, Cast), so cpu and gpu get it from here.

Any equation ONNX allows: explicit or implicit output, `...` (right-aligned, broadcast),
labelled dims of size 1 broadcasting, repeated labels in one operand (the diagonal: the
repeated axes moved last and merged, then a Gather of the diagonal's flat positions), 1 to
N operands. In order:

1. per operand: diagonals; size-1 axes of a label that is larger elsewhere dropped (they
   broadcast); labels that no other operand or the output has summed out (ReduceSum);
2. two operands at a time, the pair with the smallest result first: labels both have and
   later need are batch dims, labels both have and nothing later needs are contracted.
   Nothing contracted: one broadcast Mul. Else one batched MatMul over
   [*batch, rows, k] @ [*batch, k, cols] views (so `bhid,bhjd->bhij` is one MatMul after a
   transposed copy of the second operand), or, where the target's MatMul refuses the
   dtype (cpu: float32 only; integers, float64) or k is empty (the cpu MatMul leaves its
   output unwritten then), a broadcast Mul over [*batch, rows, k, cols] then a ReduceSum
   of the k axes;
3. what is left summed over the labels the output lacks and transposed to its order.

float16 / bfloat16 run in their own type where the target takes every node so, else in
float32 between two Casts (as ref computes them). A dtype or a size the target's nodes
refuse leaves the node unsupported (`einsum_supported`); lowering it anyway is a
LoweringError naming the node and its equation."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ...errors import GraphError
from ...ir import DType, Graph, Node, Value
from ...ir.ops.linalg import parse_einsum
from .lower import LoweringContext, LoweringError, node_label, static_dims
from .lower_support import node_supported

HALF = (DType.f16, DType.bf16)


class _Refused(Exception):
    """The equation cannot be lowered with the target's nodes (the message says why)."""


class _Term:
    """An operand during the decomposition: its value and one label per axis (a letter, or
    an int for the ellipsis dim counted from the left of the broadcast ellipsis)."""

    def __init__(self, value: Value, labels: list):
        self.value, self.labels = value, list(labels)

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(static_dims(self.value))


class _Builder:
    """IR nodes appended to a scratch graph (which gives them types and constants)."""

    def __init__(self, node: Node, ctx):
        self.node, self.ctx = node, ctx
        self.graph = Graph(f"{node_label(node)}/einsum")
        self.nodes: list[Node] = []

    def add(self, op: str, inputs: list, **attrs) -> Value:
        name = f"{node_label(self.node)}/einsum/{op.lower()}{len(self.nodes)}"
        built = self.graph.add_node(op, inputs, attrs, name=name)
        self.nodes.append(built)
        return built.outputs[0]

    def ints(self, values) -> Value:
        return self.graph.constant(np.asarray(list(values), np.int64), "einsum_ints")

    def supported(self, start: int = 0) -> bool:
        return all(node_supported(n, self.ctx) for n in self.nodes[start:])

    # -- shape moves ---------------------------------------------------------------------
    def transpose(self, term: _Term, labels: list) -> _Term:
        perm = [term.labels.index(label) for label in labels]
        if perm == list(range(len(perm))):
            return term
        return _Term(self.add("Transpose", [term.value], perm=perm), labels)

    def reshape(self, value: Value, dims) -> Value:
        if tuple(static_dims(value)) == tuple(dims):
            return value
        return self.add("Reshape", [value, self.ints(dims)], allowzero=1)

    def sum_out(self, term: _Term, labels: list) -> _Term:
        """`term` summed over `labels` (moved last first unless the reduced axes of size
        > 1 are already adjacent: the gpu's Reduce takes one run of axes)."""
        if not labels:
            return term
        keep = [label for label in term.labels if label not in labels]
        axes = [i for i, label in enumerate(term.labels) if label in labels]
        live = [i for i in axes if term.dims[i] != 1]
        if live and any(term.dims[i] != 1 and i not in axes for i in range(live[0], live[-1] + 1)):
            term = self.transpose(term, keep + [lb for lb in term.labels if lb in labels])
            axes = list(range(len(keep), len(term.labels)))
        value = self.add("ReduceSum", [term.value, self.ints(axes)], keepdims=0)
        return _Term(value, keep)

    def diagonal(self, term: _Term, label) -> _Term:
        """The axes of `label` (repeated in `term`) merged into one: their diagonal."""
        others = [lb for lb in term.labels if lb != label]
        axes = [i for i, lb in enumerate(term.labels) if lb == label]
        sizes = {term.dims[i] for i in axes}
        if len(sizes) != 1:
            raise _Refused(f"label {label!r} repeats with different sizes {sorted(sizes)}")
        n = sizes.pop()
        order = [i for i, lb in enumerate(term.labels) if lb != label] + axes
        perm_value = term.value
        if order != list(range(len(order))):
            perm_value = self.add("Transpose", [term.value], perm=order)
        kept_dims = [term.dims[i] for i in order[: len(others)]]
        flat = self.reshape(perm_value, kept_dims + [n ** len(axes)])
        step = sum(n**j for j in range(len(axes)))  # flat index of (k, k, ..., k) is k * step
        index = self.graph.constant(np.arange(n, dtype=np.int64) * step, "einsum_diagonal")
        value = self.add("Gather", [flat, index], axis=len(others))
        return _Term(value, others + [label])

    # -- products ------------------------------------------------------------------------
    def contract(self, a: _Term, b: _Term, keep: set) -> _Term:
        a = self.sum_out(a, [lb for lb in a.labels if lb not in b.labels and lb not in keep])
        b = self.sum_out(b, [lb for lb in b.labels if lb not in a.labels and lb not in keep])
        batch = [lb for lb in a.labels if lb in b.labels and lb in keep]
        summed = [lb for lb in a.labels if lb in b.labels and lb not in keep]
        a_only = [lb for lb in a.labels if lb not in b.labels]
        b_only = [lb for lb in b.labels if lb not in a.labels]
        size = {**dict(zip(a.labels, a.dims)), **dict(zip(b.labels, b.dims))}
        out_labels = batch + a_only + b_only
        out_dims = [size[lb] for lb in out_labels]
        if not summed:
            return _Term(self._broadcast_mul(a, b, batch, a_only, b_only, [], size), out_labels)
        start = len(self.nodes)
        rows, cols, inner = (int(np.prod([size[lb] for lb in g])) for g in (a_only, b_only, summed))
        if inner == 0:  # an empty sum is 0: the reduction writes it, a product may not
            return self._mul_sum(a, b, batch, a_only, b_only, summed, size, out_labels)
        at = self.transpose(a, batch + a_only + summed)
        bt = self.transpose(b, batch + summed + b_only)
        lead = [size[lb] for lb in batch]  # kept apart: [b, h, i, j] needs no reshape
        product = self.add(
            "MatMul",
            [
                self.reshape(at.value, lead + [rows, inner]),
                self.reshape(bt.value, lead + [inner, cols]),
            ],
        )
        if self.supported(start):
            return _Term(self.reshape(product, out_dims), out_labels)
        del self.nodes[start:]  # the target's MatMul refuses the dtype: Mul + ReduceSum
        return self._mul_sum(a, b, batch, a_only, b_only, summed, size, out_labels)

    def _mul_sum(self, a, b, batch, a_only, b_only, summed, size, out_labels) -> _Term:
        value = self._broadcast_mul(a, b, batch, a_only, b_only, summed, size)
        first = len(batch) + len(a_only)
        reduced = list(range(first, first + len(summed)))
        return _Term(self.add("ReduceSum", [value, self.ints(reduced)], keepdims=0), out_labels)

    def _broadcast_mul(self, a, b, batch, a_only, b_only, summed, size) -> Value:
        """a * b over [batch, a_only, summed, b_only] (size-1 axes where one lacks a label):
        the operands in the orders a MatMul would read them, so no more transposes."""
        at = self.transpose(a, batch + a_only + summed)
        bt = self.transpose(b, batch + summed + b_only)
        lead = [size[lb] for lb in batch]
        mid = [size[lb] for lb in summed]
        a_dims = lead + [size[lb] for lb in a_only] + mid + [1] * len(b_only)
        b_dims = lead + [1] * len(a_only) + mid + [size[lb] for lb in b_only]
        return self.add("Mul", [self.reshape(at.value, a_dims), self.reshape(bt.value, b_dims)])


def _labels(terms: list[str], dims: list[tuple], output: str):
    """(labels per operand, output labels): letters, and ints 0..E-1 for the ellipsis dims
    (E the longest ellipsis; a shorter one is right-aligned)."""
    per_operand, ellipsis_ranks = [], []
    for term, shape in zip(terms, dims):
        head, dots, tail = term.partition("...")
        if not all(c.isalpha() for c in head + tail):
            raise _Refused(f"term {term!r} has characters other than letters and one '...'")
        rank = len(shape) - len(head) - len(tail)
        if rank < 0 or (rank and not dots):
            raise _Refused(f"term {term!r} does not match its operand's rank {len(shape)}")
        ellipsis_ranks.append(rank if dots else 0)
        per_operand.append((head, rank if dots else 0, tail))
    width = max(ellipsis_ranks, default=0)
    labels = [
        list(head) + list(range(width - rank, width)) + list(tail)
        for head, rank, tail in per_operand
    ]
    head, dots, tail = output.partition("...")
    if not dots and width:
        raise _Refused("the inputs have '...' dims that the output lacks")
    out = list(head) + (list(range(width)) if dots else []) + list(tail)
    letters = {lb for ls in labels for lb in ls}
    missing = [lb for lb in out if isinstance(lb, str) and lb not in letters]
    if missing or len(set(out)) != len(out):
        raise _Refused(f"output {output!r} repeats a label or names one no input has")
    return labels, out


def _decompose(node: Node, ctx, compute: DType | None) -> _Builder:
    """The nodes computing `node` (`compute`: float32 for half types, with Casts around)."""
    equation = node.attrs["equation"]
    try:
        terms, output = parse_einsum(equation, len(node.inputs))
    except GraphError as exc:
        raise _Refused(str(exc)) from None
    shapes = [static_dims(v) for v in node.inputs]
    labels, out = _labels(terms, shapes, output)
    b = _Builder(node, ctx)
    operands = []
    for value, ls in zip(node.inputs, labels):
        if compute is not None:
            value = b.add("Cast", [value], to=compute)
        term = _Term(value, ls)
        for label in dict.fromkeys(ls):
            if ls.count(label) > 1:
                term = b.diagonal(term, label)
        operands.append(term)
    size: dict = {}
    for term in operands:
        for label, d in zip(term.labels, term.dims):
            known = size.get(label, 1)
            if known not in (1, d) and d != 1:
                raise _Refused(f"label {label!r} has sizes {known} and {d}")
            size[label] = max(known, d) if known != 0 and d != 0 else 0
    # size-1 axes of a label larger elsewhere broadcast: dropped here
    for i, term in enumerate(operands):
        keep = [lb for lb, d in zip(term.labels, term.dims) if d == size[lb]]
        if len(keep) != len(term.labels):
            value = b.reshape(term.value, [size[lb] for lb in keep])
            operands[i] = _Term(value, keep)
    while len(operands) > 1:
        i, j = _cheapest_pair(operands, out, size)
        rest = [t for k, t in enumerate(operands) if k not in (i, j)]
        keep = set(out).union(*(t.labels for t in rest))
        merged = b.contract(operands[i], operands[j], keep)
        operands = rest[:i] + [merged] + rest[i:]
    term = b.sum_out(operands[0], [lb for lb in operands[0].labels if lb not in out])
    term = b.transpose(term, out)
    value = term.value
    if compute is not None:
        value = b.add("Cast", [value], to=node.inputs[0].type.dtype)
    result = node.outputs[0]
    value = b.reshape(value, static_dims(result))
    if not b.nodes or value is not b.nodes[-1].outputs[0]:
        value = b.add("Identity", [value])
    if value.type != result.type:
        raise _Refused(f"the decomposition gives {value.type}, the node {result.type}")
    b.nodes[-1].outputs[0] = result
    return b


def _cheapest_pair(operands: list[_Term], out: list, size: dict) -> tuple[int, int]:
    """The pair whose product has the fewest elements (the first such pair on a tie)."""
    best, best_cost = (0, 1), None
    for i, j in combinations(range(len(operands)), 2):
        rest = [t for k, t in enumerate(operands) if k not in (i, j)]
        keep = set(out).union(*(t.labels for t in rest))
        labels = set(operands[i].labels) | set(operands[j].labels)
        cost = int(np.prod([size[lb] for lb in labels if lb in keep]))
        if best_cost is None or cost < best_cost:
            best, best_cost = (i, j), cost
    return best


def _plan(node: Node, ctx) -> _Builder:
    """The nodes of the first decomposition whose every node the target takes (float16 /
    bfloat16: in their own type, else in float32)."""
    reasons = []
    dtype = node.inputs[0].type.dtype if node.inputs else None
    for compute in (None, DType.f32) if dtype in HALF else (None,):
        try:
            built = _decompose(node, ctx, compute)
        except _Refused as exc:
            raise LoweringError(_problem(node, ctx, str(exc))) from None
        if built.supported():
            return built
        first = next(n for n in built.nodes if not node_supported(n, ctx))
        reasons.append(f"{first.op} of {first.inputs[0].type}")
    raise LoweringError(
        _problem(node, ctx, f"the {ctx.target} target refuses {' and '.join(reasons)}")
    )


def _problem(node: Node, ctx, why: str) -> str:
    return (
        f"the {ctx.target} target cannot run Einsum node {node_label(node)!r} (equation "
        f"{node.attrs.get('equation')!r}): {why}"
    )


def einsum_refusal(node: Node, ctx) -> str | None:
    """Why the target (ctx: a SupportContext or LoweringContext) cannot run this Einsum node
    (naming it, its equation and the node of the decomposition it refuses), or None."""
    if not node.inputs or len({v.type.dtype for v in node.inputs}) != 1:
        return _problem(node, ctx, "its operands must share one element type")
    try:
        _plan(node, ctx)
    except LoweringError as exc:
        return str(exc)
    return None


def einsum_supported(node: Node, ctx) -> bool:
    return einsum_refusal(node, ctx) is None


def lower_einsum(node: Node, ctx: LoweringContext) -> None:
    for built in _plan(node, ctx).nodes:
        ctx.lowerings[built.op](built, ctx)


lower_einsum.supports = einsum_supported

LOWERINGS = {"Einsum": lower_einsum}
