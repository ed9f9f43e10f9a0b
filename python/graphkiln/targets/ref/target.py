# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ref target: runs the IR with numpy, node by node. The oracle; never imports _core."""

from __future__ import annotations

from ...ir import Graph
from ..base import Target
from .evaluator import RefExecutable, check_kernels
from .table import KERNELS


class RefTarget(Target):
    name = "ref"

    def compile(self, graph: Graph, options: dict) -> RefExecutable:
        check_kernels(graph, KERNELS, self.name)
        return RefExecutable(graph, KERNELS)
