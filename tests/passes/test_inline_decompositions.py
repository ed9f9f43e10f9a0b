# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""inline_decompositions: before / after IR text with a decomposition given by hand and a
target predicate given by the test; results checked on ref (fresh random inputs)."""

from __future__ import annotations

import numpy as np

from graphkiln.ir import Decomposition, parse_graph, print_graph
from graphkiln.ir.clone import clone_graph
from graphkiln.ir.equality import structural_diff
from graphkiln.passes import inline_decompositions
from graphkiln.passes.context import PassContext
from graphkiln.targets.ref.evaluator import run_graph
from graphkiln.targets.ref.table import KERNELS
from graphkiln.targets.ref.target import evaluate

# Softplus(x) = log(exp(x) + 1), written out as the node's decomposition
SOFTPLUS_BODY = """
graph body(%a: f32[2,3]) {
  %e: f32[2,3] = Exp(%a)
  %one: f32[] = Constant() {value = tensor<f32[]> [1.0]}
  %s: f32[2,3] = Add(%e, %one)
  %r: f32[2,3] = Log(%s)
  return %r
}"""

BEFORE = """
graph main(%x: f32[2,3]) {
  %y: f32[2,3] = Softplus(%x)
  %z: f32[2,3] = Neg(%y)
  return %z, %y
}"""


def _graph(text: str = BEFORE, op: str = "Softplus", body: str = SOFTPLUS_BODY):
    graph = parse_graph(text)
    for node in graph.nodes:
        if node.op == op:
            node.decomposition = Decomposition(lambda: parse_graph(body))
    return graph


def _run(graph, supports):
    original = clone_graph(graph)
    inline_decompositions.run(graph, PassContext(evaluate=evaluate, supports=supports))
    graph.verify()
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal(v.type.dims).astype(np.float32) for v in original.inputs]
    for got, want in zip(run_graph(graph, inputs, KERNELS), run_graph(original, inputs, KERNELS)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return graph


def _same(graph, text: str) -> None:
    diff = structural_diff(graph, parse_graph(text))
    assert diff is None, f"{diff}\n--- got:\n{print_graph(graph)}"


def test_refused_node_becomes_its_body():
    graph = _run(_graph(), lambda node: node.op != "Softplus")
    _same(
        graph,
        """
graph main(%x: f32[2,3]) {
  %e: f32[2,3] = Exp(%x)
  %one: f32[] = Constant() {value = tensor<f32[]> [1.0]}
  %s: f32[2,3] = Add(%e, %one)
  %y: f32[2,3] = Log(%s)
  %z: f32[2,3] = Neg(%y)
  return %z, %y
}""",
    )
    # the node's output stays the same value: its name, and the graph output, are kept
    assert [v.name for v in graph.outputs] == ["z", "y"]
    assert graph.outputs[1].producer.op == "Log"


def test_supported_or_undecided_node_stays():
    for answer in (True, None):  # None: the plans per input shape decide
        graph = _run(_graph(), lambda node, answer=answer: answer)
        _same(graph, BEFORE)
        assert not graph.nodes[0].decomposition.built  # never asked for


def test_no_predicate_changes_nothing():
    """ref (no `supports`) is the oracle: it runs the op itself."""
    graph = _graph()
    inline_decompositions.run(graph, PassContext(evaluate=evaluate))
    _same(graph, BEFORE)


def test_nested_decomposition_inlined_in_a_later_round():
    # the outer body's Softplus carries a decomposition of its own
    outer = """
graph body(%a: f32[2,3]) {
  %p: f32[2,3] = Softplus(%a)
  %t: f32[2,3] = Tanh(%p)
  %r: f32[2,3] = Mul(%a, %t)
  return %r
}"""
    graph = _graph(BEFORE.replace("Softplus", "Mish"), "Mish", outer)
    graph.nodes[0].decomposition.body().nodes[0].decomposition = Decomposition(
        parse_graph(SOFTPLUS_BODY)
    )
    graph = _run(graph, lambda node: node.op not in ("Softplus", "Mish"))
    assert sorted(n.op for n in graph.nodes) == [
        "Add",
        "Constant",
        "Exp",
        "Log",
        "Mul",
        "Neg",
        "Tanh",
    ]


def test_body_returning_its_input_rewires_readers():
    identity = """
graph body(%a: f32[2,3]) {
  return %a
}"""
    text = BEFORE.replace("Softplus", "Identity")
    graph = _run(_graph(text, "Identity", identity), lambda node: node.op != "Identity")
    _same(
        graph,
        """
graph main(%x: f32[2,3]) {
  %z: f32[2,3] = Neg(%x)
  return %z, %x
}""",
    )


def test_body_that_no_longer_fits_is_left_alone():
    two_inputs = """
graph body(%a: f32[2,3], %b: f32[2,3]) {
  %r: f32[2,3] = Add(%a, %b)
  return %r
}"""
    graph = _run(_graph(body=two_inputs), lambda node: node.op != "Softplus")
    _same(graph, BEFORE)


def test_fresh_names_for_body_values():
    text = """
graph main(%x: f32[2,3]) {
  %e: f32[2,3] = Relu(%x)
  %y: f32[2,3] = Softplus(%e)
  return %y
}"""
    graph = _run(_graph(text), lambda node: node.op != "Softplus")
    names = [v.name for n in graph.nodes for v in n.outputs]
    assert len(names) == len(set(names)) and names[0] == "e" and names[-1] == "y"
