# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What every target provides: a pass pipeline and `compile(graph, options) -> Executable`."""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from ..ir import Graph, Node


class Executable:
    """A compiled graph: `run(inputs in graph-input order) -> outputs in graph-output order`."""

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        raise NotImplementedError


class Target:
    name = "?"
    # option name -> what it does; compile() refuses options not listed here
    options: dict[str, str] = {}
    # options given when the target was made (get_target("gpu", device=1)): compile's own
    # options take precedence
    defaults: dict = {}

    def passes(self, options: dict) -> list:
        """The optimization pipeline for this target (a plain list of pass modules)."""
        return []

    def compile(self, graph: Graph, options: dict) -> Executable:
        raise NotImplementedError

    # node -> whether this target runs it natively (True / False, None where the input
    # shapes of a plan decide): the pass pipeline inlines the decompositions of the nodes
    # it refuses (passes/inline_decompositions.py). None: the target runs every op itself.
    node_support: Callable[[Node], bool | None] | None = None

    def unsupported_nodes(self, graph: Graph) -> list:
        """The nodes of `graph` (after this target's passes; subgraphs are separate graphs)
        this target cannot run natively: no kernel for the op, or none for its attributes,
        dtypes or shapes. `graphkiln ops --model` reports them. Default: none."""
        return []

    def check_options(self, options: dict) -> None:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            accepted = ", ".join(f"{k} ({v})" for k, v in self.options.items()) or "none"
            raise ValueError(
                f"target {self.name!r} has no option {', '.join(unknown)}; accepted: {accepted}"
            )

    def __repr__(self) -> str:
        return f"<graphkiln target {self.name}>"


def as_outputs(result) -> list:
    """A kernel's return value as a list of outputs: a tuple or list holds one item per
    output (so a kernel returning a sequence value returns it in a 1-tuple)."""
    if isinstance(result, (tuple, list)) and not isinstance(result, np.ndarray):
        return list(result)
    return [result]
