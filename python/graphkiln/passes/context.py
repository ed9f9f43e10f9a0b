# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What passes get from the pass manager besides the graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

from ..ir import Node


@dataclass
class PassContext:
    """`evaluate(node, inputs) -> outputs` runs one node on numpy arrays; the target that
    compiles supplies it (the ref kernels), so passes need not import a target."""

    evaluate: Callable[[Node, list], list] | None = None
    options: dict = field(default_factory=dict)
    max_fold_bytes: int = 64 << 20
    # True where every node's output types were just inferred from its inputs' (a plan's
    # specialization refreshes them first): fold_constants then leaves the types its walk
    # did not change as they are instead of inferring the whole graph's again after it
    types_refreshed: bool = False
    # whether the compiling target runs a node natively: True, False, or None where the
    # dims a plan per input shape fixes decide it (Target.node_support; None for a target
    # that runs every op itself, such as ref): passes/inline_decompositions.py reads it
    supports: Callable[[Node], bool | None] | None = None
