# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ref target: runs the IR with numpy, node by node. The oracle; never imports _core.
By default it runs the graph as imported; `optimize=True` runs the full pass pipeline first
(to check that the passes keep results). It has no plans: `shapes=[...]` (cpu and gpu build
those plans while compiling) is accepted so one call compiles for any target, and its entries
are checked against the inputs, but nothing is built."""

from __future__ import annotations

from ...ir import Graph, Node
from ..base import Target
from ..plan_options import ahead_shapes
from .evaluator import RefExecutable, check_kernels, evaluate_node
from .table import KERNELS


class RefTarget(Target):
    name = "ref"
    options = {
        "optimize": "run the full optimization pipeline first (default False)",
        "shapes": "a list of {input name: shape}, as for cpu and gpu, e.g. [{'x': [1, "
        "3, 224, 224]}]: checked against the inputs (rank, static dims, "
        "symbols); ref has no plans, so nothing is built ahead or saved",
    }

    def passes(self, options: dict) -> list:
        from ...passes.pipelines import pipeline

        return pipeline("full") if options.get("optimize") else []

    def compile(self, graph: Graph, options: dict) -> RefExecutable:
        ahead_shapes(options, list(graph.inputs))  # checked only: no plans to build
        check_kernels(graph, KERNELS, self.name)
        return RefExecutable(graph, KERNELS)

    def unsupported_nodes(self, graph: Graph) -> list[Node]:
        """Nodes of an op ref has no kernel for (compile refuses them)."""
        return [n for n in graph.nodes if n.op not in KERNELS]


def evaluate(node: Node, inputs: list, captured: dict | None = None) -> list:
    """Run one node on ref's kernels; `captured` as for evaluator.evaluate_node."""
    return evaluate_node(node, inputs, KERNELS, captured)
