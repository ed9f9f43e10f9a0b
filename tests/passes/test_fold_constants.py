# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
import numpy as np

from graphkiln.passes import eliminate_dead_code, fold_constants
from graphkiln.passes.context import PassContext
from graphkiln.ir import parse_graph
from pass_testing import check_pass


def test_constant_expression_becomes_a_constant():
    check_pass(
        fold_constants,
        """
graph main(%x: f32[2]) {
  %a: f32[2] = Constant() {value = tensor<f32[2]> [1.0, 2.0]}
  %b: f32[2] = Add(%a, %a)
  %c: f32[2] = Add(%x, %b)
  return %c
}""",
        """
graph main(%x: f32[2]) {
  %a: f32[2] = Constant() {value = tensor<f32[2]> [1.0, 2.0]}
  %b: f32[2] = Constant() {value = tensor<f32[2]> [2.0, 4.0]}
  %c: f32[2] = Add(%x, %b)
  return %c
}""",
    )


def test_exporter_shape_chain_folds_into_a_constant_shape():
    # Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) with static x
    graph = parse_graph("""
graph main(%x: f32[3,4,5]) {
  %s: i64[3] = Shape(%x)
  %i: i64[] = Constant() {value = tensor<i64[]> [0]}
  %n: i64[] = Gather(%s, %i) {axis = 0}
  %ax: i64[1] = Constant() {value = tensor<i64[1]> [0]}
  %n1: i64[1] = Unsqueeze(%n, %ax)
  %m: i64[1] = Constant() {value = tensor<i64[1]> [-1]}
  %shape: i64[2] = Concat(%n1, %m) {axis = 0}
  %y: f32[3,20] = Reshape(%x, %shape)
  return %y
}""")
    from graphkiln.targets.ref.target import evaluate

    ctx = PassContext(evaluate=evaluate)
    fold_constants.run(graph, ctx)
    eliminate_dead_code.run(graph, ctx)
    assert [n.op for n in graph.nodes] == ["Constant", "Reshape"]
    assert graph.nodes[0].attrs["value"].tolist() == [3, -1]


def test_random_ops_are_not_folded():
    graph = parse_graph("""
graph main(%x: f32[2]) {
  %r: f32[2] = RandomUniform() {dtype = f32, shape = [2]}
  %y: f32[2] = Add(%x, %r)
  return %y
}""")
    from graphkiln.targets.ref.target import evaluate

    fold_constants.run(graph, PassContext(evaluate=evaluate))
    assert graph.nodes[0].op == "RandomUniform"


def test_folding_a_shape_chain_makes_downstream_dims_static():
    # symbolic at import (the shape comes from a computation), static once folded
    graph = parse_graph("""
graph main(%x: f32[2,6]) {
  %s: i64[2] = Shape(%x)
  %up: i64[2] = Constant() {value = tensor<i64[2]> [2, 1]}
  %down: i64[2] = Constant() {value = tensor<i64[2]> [1, 2]}
  %m: i64[2] = Mul(%s, %up)
  %t: i64[2] = Div(%m, %down)
  %y: f32[a,b] = Reshape(%x, %t)
  return %y
}""")
    from graphkiln.targets.ref.target import evaluate

    fold_constants.run(graph, PassContext(evaluate=evaluate))
    assert str(graph.outputs[0].type) == "f32[4,3]"


def _fold(graph):
    from graphkiln.targets.ref.target import evaluate

    ctx = PassContext(evaluate=evaluate)
    fold_constants.run(graph, ctx)
    eliminate_dead_code.run(graph, ctx)
    return graph


def test_chain_through_a_reshape_whose_dims_the_walk_made_static_folds_in_one_run():
    # the second Shape reads a Reshape typed f32[a,b,c]: its dims are known only once the
    # first chain folded and the Reshape's type was inferred again, in the same walk
    graph = _fold(
        parse_graph("""
graph main(%x: f32[2,3,4]) {
  %s: i64[3] = Shape(%x)
  %i: i64[] = Constant() {value = tensor<i64[]> [0]}
  %n: i64[] = Gather(%s, %i) {axis = 0}
  %ax: i64[1] = Constant() {value = tensor<i64[1]> [0]}
  %n1: i64[1] = Unsqueeze(%n, %ax)
  %m: i64[2] = Constant() {value = tensor<i64[2]> [4, -1]}
  %shape: i64[3] = Concat(%n1, %m) {axis = 0}
  %y: f32[a,b,c] = Reshape(%x, %shape)
  %s2: i64[3] = Shape(%y)
  %j: i64[1] = Constant() {value = tensor<i64[1]> [2]}
  %k: i64[1] = Gather(%s2, %j) {axis = 0}
  %minus: i64[1] = Constant() {value = tensor<i64[1]> [-1]}
  %shape2: i64[2] = Concat(%minus, %k) {axis = 0}
  %z: f32[p,q] = Reshape(%y, %shape2)
  return %z
}""")
    )
    assert [n.op for n in graph.nodes] == ["Constant", "Reshape", "Constant", "Reshape"]
    assert graph.nodes[2].attrs["value"].tolist() == [-1, 3]
    assert graph.outputs[0].type.dims == (8, 3)


def test_fused_node_of_constants_folds():
    from graphkiln.passes.fusion import make_fused

    graph = parse_graph("""
graph main(%x: f32[3]) {
  %s: i64[1] = Shape(%x)
  %f: f32[1] = Cast(%s) {to = f32}
  %r: f32[1] = Sqrt(%f)
  %y: f32[3] = Mul(%x, %r)
  return %y
}""")
    shape, cast, sqrt, _ = graph.nodes
    fold_constants.run(graph, None)  # Shape only: no evaluator for Cast / Sqrt
    make_fused(graph, [n for n in graph.nodes if n.op in ("Cast", "Sqrt")], "pointwise")
    assert [n.op for n in graph.nodes] == ["Constant", "Fused", "Mul"]
    _fold(graph)
    assert [n.op for n in graph.nodes] == ["Constant", "Mul"]
    assert graph.nodes[0].attrs["value"].tolist() == [np.float32(np.sqrt(3.0))]
