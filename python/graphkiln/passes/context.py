# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What passes get from the pass manager besides the graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..ir import Node


@dataclass
class PassContext:
    """`evaluate(node, inputs) -> outputs` runs one node on numpy arrays; the target that
    compiles supplies it (the ref kernels), so passes need not import a target."""

    evaluate: Callable[[Node, list], list] | None = None
    options: dict = field(default_factory=dict)
    max_fold_bytes: int = 64 << 20
