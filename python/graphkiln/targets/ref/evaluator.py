# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Runs a Graph node by node with the numpy kernels of targets/ref/table.py."""

from __future__ import annotations

from collections import ChainMap
from typing import Any
from collections.abc import Callable

import numpy as np

from ...errors import CompileError, GraphkilnError
from ...ir import Graph, Node, TensorType
from ...ir.graph import node_subgraphs
from ..base import Executable, as_outputs


class Subgraph:
    """A graph attribute as the kernels see it: call it with its inputs, get its outputs.
    It reads captured values of the enclosing graph from the environment it was made in."""

    def __init__(self, graph: Graph, kernels: dict[str, Callable], env):
        self.graph = graph
        self.kernels = kernels
        self.env = env

    @property
    def num_inputs(self) -> int:
        return len(self.graph.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.graph.outputs)

    def __call__(self, *inputs) -> list:
        return run_graph(self.graph, list(inputs), self.kernels, self.env)


def run_graph(graph: Graph, inputs: list, kernels: dict[str, Callable], outer=None) -> list:
    env = ChainMap({}, outer) if outer is not None else ChainMap({})
    for value, data in zip(graph.inputs, inputs):
        env[value] = data
    for node in graph.nodes:
        _run_node(node, env, kernels)
    return [env[v] for v in graph.outputs]


def _run_node(node: Node, env, kernels: dict[str, Callable]) -> None:
    fn = kernels[node.op]
    args = [None if v is None else env[v] for v in node.inputs]
    attrs = {
        k: (Subgraph(v, kernels, env) if isinstance(v, Graph) else v) for k, v in node.attrs.items()
    }
    try:
        results = as_outputs(fn(*args, **attrs))
    except GraphkilnError:
        raise
    except Exception as exc:
        label = f"{node.op} node {node.name!r}" if node.name else f"{node.op} node"
        raise RuntimeError(f"ref: {label} failed: {type(exc).__name__}: {exc}") from exc
    for value, result in zip(node.outputs, results):
        if value is None:
            continue
        if isinstance(value.type, TensorType):
            result = _as_tensor(result, value.type)
        env[value] = result


def _as_tensor(result: Any, expected: TensorType) -> np.ndarray:
    array = np.asarray(result)
    want = expected.dtype.numpy
    if array.dtype != want:
        array = array.astype(want)
    return array


def check_kernels(graph: Graph, kernels: dict[str, Callable], target: str) -> None:
    """Every op of the graph (and its subgraphs) has a kernel, else a CompileError naming them."""
    missing = sorted(_ops(graph) - set(kernels))
    if missing:
        raise CompileError(f"target {target!r} has no kernel for: {', '.join(missing)}")


def _ops(graph: Graph) -> set[str]:
    ops = set()
    for node in graph.nodes:
        ops.add(node.op)
        for sub in node_subgraphs(node):
            ops |= _ops(sub)
    return ops


class RefExecutable(Executable):
    """Runs may overlap (from several threads): a run's values live in its own environment,
    and the only data runs share, the graph's constants, is made read-only here so that no
    kernel can change it for the others (outputs that are, or view, a constant are copied)."""

    def __init__(self, graph: Graph, kernels: dict[str, Callable]):
        self.graph = graph
        self.kernels = kernels
        _freeze_constants(graph)

    def run(self, inputs) -> list:
        outputs = run_graph(self.graph, list(inputs), self.kernels)
        return [
            x.copy() if isinstance(x, np.ndarray) and not x.flags.writeable else x for x in outputs
        ]


def _freeze_constants(graph: Graph) -> None:
    for node in graph.nodes:
        if node.op == "Constant" and isinstance(node.attrs.get("value"), np.ndarray):
            node.attrs["value"].flags.writeable = False
        for sub in node_subgraphs(node):
            _freeze_constants(sub)


def evaluate_node(
    node: Node, inputs: list, kernels: dict[str, Callable], captured: dict | None = None
) -> list:
    """Run one node on numpy arrays (constant folding uses this). `captured`: the values of
    the enclosing graph its subgraphs read (ir.graph.captured_values), Value -> data."""
    env = ChainMap({}, dict(captured)) if captured else ChainMap({})
    for value, data in zip(node.inputs, inputs):
        if value is not None:
            env[value] = data
    _run_node(node, env, kernels)
    return [None if v is None else env[v] for v in node.outputs]
