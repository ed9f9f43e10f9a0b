# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Table-driven rewriting: rules are (op, function) pairs run to a fixpoint.

A rule function gets `(node, rw)` and returns the values that replace the node's outputs,
or None to decline. New nodes are made with `rw.emit(...)`, which places them before the
node being rewritten so the graph stays in execution order."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..ir import Graph, Node, Value
from .util import replace_uses

Rule = tuple[str, Callable[[Node, "Rewriter"], "list[Value | None] | None"]]
MAX_ROUNDS = 16


class Rewriter:
    def __init__(self, graph: Graph, ctx):
        self.graph = graph
        self.ctx = ctx
        self.current: Node | None = None
        self.uses: dict[Value, list[Node]] = {}

    def emit(self, op: str, *inputs: Value | None, **attrs) -> Value:
        return self.emit_node(op, list(inputs), attrs).output(0)

    def emit_node(self, op: str, inputs: list, attrs: dict, num_outputs: int | None = None) -> Node:
        node = self.graph.add_node(
            op,
            inputs,
            attrs,
            num_outputs=num_outputs,
            name=self.current.name if self.current else "",
        )
        self._move_before_current(node)
        return node

    def constant(self, array, name: str = "const") -> Value:
        node = self.graph.add_node("Constant", [], {"value": array}, output_names=[name])
        self._move_before_current(node)
        return node.output(0)

    def _move_before_current(self, node: Node) -> None:
        """Move `node`, just appended, to before the node being rewritten."""
        assert self.current is not None, "emit / constant outside a rule"
        self.graph.nodes.pop()
        self.graph.nodes.insert(self.graph.nodes.index(self.current), node)

    def users_of(self, value: Value | None) -> list[Node]:
        return self.uses.get(value, []) if value is not None else []

    def only_user(self, value: Value | None) -> Node | None:
        """The one node reading `value` (None: no value, several readers or a graph output)."""
        readers = self.uses.get(value, []) if value is not None else []
        return readers[0] if len(readers) == 1 and value not in self.graph.outputs else None


def apply_rules(graph: Graph, rules: Sequence[Rule], ctx) -> int:
    """Apply rules until none fires (at most MAX_ROUNDS rounds). Returns the rewrite count."""
    from . import eliminate_dead_code

    by_op: dict[str, list] = {}
    for op, fn in rules:
        by_op.setdefault(op, []).append(fn)
    rw = Rewriter(graph, ctx)
    total = 0
    for _ in range(MAX_ROUNDS):
        fired = 0
        rw.uses = graph.users()
        for node in list(graph.nodes):
            for fn in by_op.get(node.op, ()):
                if node not in graph.nodes:
                    break
                rw.current = node
                result = fn(node, rw)
                if result is None:
                    continue
                for old, new in zip(node.outputs, result):
                    if old is not None and new is not None and new is not old:
                        replace_uses(graph, old, new, rw.uses.get(old, []))
                fired += 1
                rw.uses = graph.users()
                break
        eliminate_dead_code.run(graph, ctx)
        total += fired
        if not fired:
            break
    return total
