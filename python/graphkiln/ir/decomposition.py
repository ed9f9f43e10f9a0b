# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A node's decomposition: the same computation written in simpler ops (for an ONNX op, the
function body ONNX defines it by), for a target that cannot run the node itself.

It lives in `Node.decomposition`, not in `attrs`: it is not part of what the op computes, so
ref, the printer, hashing and CSE never see it, and passes that replace a node simply drop
it. The body is a standalone Graph (no parent): its inputs stand for the node's present
(not None) inputs and its outputs for the node's present outputs, both in order. It is built
on first use (the frontend gives a function making it), once, also when several threads ask,
and copies of the node share it (nothing mutates a body: passes/inline_decompositions.py
copies it into the graph)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from .graph import Graph


class Decomposition:
    """`body`: the Graph, or a function returning it (or None where none can be built)."""

    __slots__ = ("_build", "_body", "_lock")

    def __init__(self, body: Graph | Callable[[], Graph | None]):
        self._lock = threading.Lock()
        if isinstance(body, Graph):
            self._build: Callable[[], Graph | None] | None = None
            self._body: Graph | None = body
        else:
            self._build, self._body = body, None

    @property
    def built(self) -> bool:
        return self._build is None

    def body(self) -> Graph | None:
        """The body, built now if it was not yet; None where the frontend could not build
        it (then the node has no decomposition to use)."""
        if self._build is not None:
            with self._lock:
                if self._build is not None:
                    self._body = self._build()
                    self._build = None
        return self._body

    def __repr__(self) -> str:
        if not self.built:
            return "<Decomposition not built>"
        body = self._body
        return f"<Decomposition {'none' if body is None else f'{len(body.nodes)} nodes'}>"
