# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
from graphkiln.passes import fuse_epilogue, fuse_pointwise, fuse_reduction
from graphkiln.passes.context import PassContext
from graphkiln.ir import parse_graph
from pass_testing import check_pass


def test_pointwise_chain_becomes_one_fused_node():
    check_pass(
        fuse_pointwise,
        """
graph main(%x: f32[2,3], %y: f32[2,3]) {
  %half: f32[] = Constant() {value = tensor<f32[]> [0.5]}
  %a: f32[2,3] = Add(%x, %y)
  %b: f32[2,3] = Relu(%a)
  %c: f32[2,3] = Mul(%b, %half)
  %d: f32[2,3] = Sigmoid(%y)
  %e: f32[2,3] = Sub(%c, %d)
  return %e
}""",
        """
graph main(%x: f32[2,3], %y: f32[2,3]) {
  %half: f32[] = Constant() {value = tensor<f32[]> [0.5]}
  %e: f32[2,3] = Fused(%x, %y) {
    kind = "pointwise",
    body = graph body(%bx: f32[2,3], %by: f32[2,3]) {
      %a: f32[2,3] = Add(%bx, %by)
      %b: f32[2,3] = Relu(%a)
      %h: f32[] = Constant() {value = tensor<f32[]> [0.5]}
      %c: f32[2,3] = Mul(%b, %h)
      %d: f32[2,3] = Sigmoid(%by)
      %e: f32[2,3] = Sub(%c, %d)
      return %e
    }
  }
  return %e
}""",
    )


def test_value_read_twice_ends_a_group():
    graph = parse_graph("""
graph main(%x: f32[4]) {
  %a: f32[4] = Exp(%x)
  %b: f32[4] = Relu(%a)
  %c: f32[4] = Neg(%a)
  return %b, %c
}""")
    fuse_pointwise.run(graph, PassContext())
    assert [n.op for n in graph.nodes] == ["Exp", "Relu", "Neg"]


def test_conv_takes_bias_residual_and_relu_as_epilogue():
    check_pass(
        fuse_epilogue,
        """
graph main(%x: f32[1,2,4,4], %r: f32[1,2,4,4]) {
  %w: f32[2,2,1,1] = Constant() {value = tensor<f32[2,2,1,1]> [1.0, -1.0, 0.5, 2.0]}
  %c: f32[1,2,4,4] = Conv(%x, %w)
  %a: f32[1,2,4,4] = Add(%c, %r)
  %y: f32[1,2,4,4] = Relu(%a)
  return %y
}""",
        """
graph main(%x: f32[1,2,4,4], %r: f32[1,2,4,4]) {
  %w: f32[2,2,1,1] = Constant() {value = tensor<f32[2,2,1,1]> [1.0, -1.0, 0.5, 2.0]}
  %y: f32[1,2,4,4] = Fused(%x, %r) {
    kind = "conv",
    body = graph body(%bx: f32[1,2,4,4], %br: f32[1,2,4,4]) {
      %bw: f32[2,2,1,1] = Constant() {value = tensor<f32[2,2,1,1]> [1.0, -1.0, 0.5, 2.0]}
      %c: f32[1,2,4,4] = Conv(%bx, %bw)
      %a: f32[1,2,4,4] = Add(%c, %br)
      %y: f32[1,2,4,4] = Relu(%a)
      return %y
    }
  }
  return %y
}""",
    )


def test_reduction_takes_pointwise_prologue_and_epilogue():
    check_pass(
        fuse_reduction,
        """
graph main(%x: f32[2,8]) {
  %sq: f32[2,8] = Mul(%x, %x)
  %axes: i64[1] = Constant() {value = tensor<i64[1]> [1]}
  %m: f32[2,1] = ReduceMean(%sq, %axes)
  %y: f32[2,1] = Sqrt(%m)
  return %y
}""",
        """
graph main(%x: f32[2,8]) {
  %axes: i64[1] = Constant() {value = tensor<i64[1]> [1]}
  %y: f32[2,1] = Fused(%x) {
    kind = "reduce",
    body = graph body(%bx: f32[2,8]) {
      %sq: f32[2,8] = Mul(%bx, %bx)
      %ba: i64[1] = Constant() {value = tensor<i64[1]> [1]}
      %m: f32[2,1] = ReduceMean(%sq, %ba)
      %y: f32[2,1] = Sqrt(%m)
      return %y
    }
  }
  return %y
}""",
    )


def test_shape_computations_are_not_fused():
    # Cast / Pow of a Shape result are shape arithmetic (a plan per shape folds them), the
    # Mul / Relu / Add on data fuse as before
    graph = parse_graph("""
graph main(%x: f32[N,4], %y: f32[N,4]) {
  %s: i64[2] = Shape(%x)
  %i: i64[] = Constant() {value = tensor<i64[]> [1]}
  %c: i64[] = Gather(%s, %i) {axis = 0}
  %f: f32[] = Cast(%c) {to = f32}
  %e: f32[] = Constant() {value = tensor<f32[]> [-0.5]}
  %scale: f32[] = Pow(%f, %e)
  %a: f32[N,4] = Mul(%x, %scale)
  %b: f32[N,4] = Relu(%a)
  %z: f32[N,4] = Add(%b, %y)
  return %z
}""")
    fuse_pointwise.run(graph, PassContext())
    assert [n.op for n in graph.nodes] == [
        "Shape",
        "Constant",
        "Gather",
        "Cast",
        "Constant",
        "Pow",
        "Fused",
    ]
    assert [n.op for n in graph.nodes[-1].attrs["body"].nodes] == ["Mul", "Relu", "Add"]
