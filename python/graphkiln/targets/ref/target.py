# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ref target: runs the IR with numpy, node by node. The oracle; never imports _core.
By default it runs the graph as imported; `optimize=True` runs the full pass pipeline first
(to check that the passes keep results)."""

from __future__ import annotations

from ...ir import Graph, Node
from ..base import Target
from .evaluator import RefExecutable, check_kernels, evaluate_node
from .table import KERNELS


class RefTarget(Target):
    name = "ref"
    options = {"optimize": "run the full optimization pipeline first (default False)"}

    def passes(self, options: dict) -> list:
        from ...passes.pipelines import FULL

        return list(FULL) if options.get("optimize") else []

    def compile(self, graph: Graph, options: dict) -> RefExecutable:
        check_kernels(graph, KERNELS, self.name)
        return RefExecutable(graph, KERNELS)

    def unsupported_nodes(self, graph: Graph) -> list[Node]:
        """Nodes of an op ref has no kernel for (compile refuses them)."""
        return [n for n in graph.nodes if n.op not in KERNELS]


def evaluate(node: Node, inputs: list, captured: dict | None = None) -> list:
    """Run one node on ref's kernels; `captured` as for evaluator.evaluate_node."""
    return evaluate_node(node, inputs, KERNELS, captured)
