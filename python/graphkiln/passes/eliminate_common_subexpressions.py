# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Merge nodes that compute the same op with the same attributes on the same inputs,
and constants with equal data."""

from __future__ import annotations

import hashlib

import numpy as np

from ..ir import Graph, Value
from ..ir.graph import node_subgraphs
from .fold_constants import NONDETERMINISTIC
from .util import replace_many

MAX_CONST_BYTES_TO_COMPARE = 1 << 20


def run(graph: Graph, ctx=None) -> Graph:
    seen: dict[tuple, list] = {}
    mapping: dict[Value, Value] = {}
    kept = []
    for node in graph.nodes:
        # inputs already merged away read their survivor, so later keys see it
        node.inputs = [None if v is None else mapping.get(v, v) for v in node.inputs]
        key = _key(node)
        if key is not None and key in seen:
            for old, new in zip(node.outputs, seen[key]):
                if old is not None and new is not None:
                    mapping[old] = new
            if all(new is not None for old, new in zip(node.outputs, seen[key]) if old is not None):
                continue
        if key is not None and key not in seen:
            seen[key] = node.outputs
        kept.append(node)
    graph.nodes = kept
    replace_many(graph, mapping)
    return graph


def _key(node):
    if node.op in NONDETERMINISTIC or node_subgraphs(node):
        return None
    attrs = []
    for name, value in sorted(node.attrs.items()):
        if isinstance(value, np.ndarray):
            if value.nbytes > MAX_CONST_BYTES_TO_COMPARE or value.dtype == object:
                return None
            digest = hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()
            value = (str(value.dtype), value.shape, digest)
        attrs.append((name, value))
    return (
        node.op,
        tuple(id(v) if v is not None else None for v in node.inputs),
        tuple(attrs),
        len(node.outputs),
    )
